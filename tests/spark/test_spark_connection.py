"""The Spark adapter without a cluster: a fake Spark session records what it is asked.

What the adapter must do: send the Spark text of each statement with only the
parameters it names (Spark binds them), return rows that answer by index, by name
and through ``_mapping``, turn the report's temporary tables into computed
temporary views, and refuse what a Spark store cannot do in one line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store.spark.connection import SparkConnection

runner = CliRunner()
#: The adapter translates what it runs with sqlglot (the `test` and `spark` extras).
needs_sqlglot = pytest.mark.skipif(
    importlib.util.find_spec("sqlglot") is None, reason="needs sqlglot (pip install -e '.[test]')"
)


class FakeFrame:
    def __init__(self, log: list[tuple[str, Any]], columns: list[str], rows: list[tuple]) -> None:
        self.log, self.columns, self.rows = log, columns, rows

    def collect(self) -> list[tuple]:
        return self.rows

    def localCheckpoint(self, eager: bool) -> FakeFrame:
        self.log.append(("checkpoint", eager))
        return self

    def createOrReplaceTempView(self, name: str) -> None:
        self.log.append(("view", name))


class FakeCatalog:
    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log

    def dropTempView(self, name: str) -> None:
        self.log.append(("drop view", name))

    def tableExists(self, name: str) -> bool:
        self.log.append(("exists", name))
        return name == "sources"


class FakeSession:
    def __init__(self, columns: list[str], rows: list[tuple]) -> None:
        self.log: list[tuple[str, Any]] = []
        self.catalog = FakeCatalog(self.log)
        self.columns, self.rows = columns, rows

    def sql(self, sql: str, args: dict[str, Any] | None = None) -> FakeFrame:
        self.log.append(("sql", (sql, args)))
        return FakeFrame(self.log, self.columns, self.rows)


@needs_sqlglot
def test_parameters_are_bound_by_spark_and_rows_read_like_sqlalchemy() -> None:
    session = FakeSession(["arm", "n"], [("control", 3), ("treatment", 4)])
    conn = SparkConnection(session, {})
    result = conn.execute(
        text("SELECT arm, CAST(COUNT(*) AS DOUBLE PRECISION) AS n FROM events WHERE e = :e"),
        {"e": "it's", "unused": 1},
    )
    assert session.log == [
        (
            "sql",
            ("SELECT arm, CAST(COUNT(*) AS DOUBLE) AS n FROM events WHERE e = :e", {"e": "it's"}),
        )
    ]
    first = result.fetchone()
    assert first is not None
    assert (first[0], first.arm, first.n, first._mapping) == (
        "control",
        "control",
        3,
        {"arm": "control", "n": 3},
    )
    assert result.fetchall() == [("treatment", 4)]
    assert result.fetchone() is None
    assert conn.execute(text("SELECT arm, n FROM t")).scalar() == "control"
    row = conn.execute(text("SELECT arm, n FROM t")).first()
    assert row is not None and row.arm == "control"
    assert list(conn.execute(text("SELECT arm, n FROM t")).scalars()) == ["control", "treatment"]
    with pytest.raises(LookupError):
        conn.execute(text("SELECT arm, n FROM t")).one()
    assert conn.dialect.name == "spark"


@needs_sqlglot
def test_temporary_tables_become_computed_views_and_are_dropped() -> None:
    session = FakeSession([], [])
    kept: dict[str, Any] = {}
    conn = SparkConnection(session, kept)
    conn.execute(
        text("CREATE TEMP TABLE abeval_x AS SELECT user_id FROM events WHERE e = :experiment"),
        {"experiment": "home"},
    )
    assert session.log == [
        ("sql", ("SELECT user_id FROM events WHERE e = :experiment", {"experiment": "home"})),
        ("checkpoint", True),
        ("view", "abeval_x"),
    ]
    assert set(kept) == {"abeval_x"}
    conn.execute(text("DROP TABLE IF EXISTS abeval_x"))
    assert session.log[-1] == ("drop view", "abeval_x") and kept == {}
    # A table this connection did not make is left to Spark.
    conn.execute(text("DROP TABLE IF EXISTS abeval_y"))
    assert session.log[-1] == ("sql", ("DROP TABLE IF EXISTS abeval_y", None))


@needs_sqlglot
def test_executemany_is_refused() -> None:
    conn = SparkConnection(FakeSession([], []), {})
    with pytest.raises(TypeError):
        conn.execute(text("SELECT :a"), [{"a": 1}, {"a": 2}])  # type: ignore[arg-type]


@needs_sqlglot
def test_views_of_a_table_read_in_place_are_views_of_plans() -> None:
    """``CREATE TEMPORARY VIEW`` (abeval.store.source_sql) becomes a view of the
    query's plan; ``DROP VIEW IF EXISTS`` drops only the session's own view."""
    session = FakeSession([], [])
    conn = SparkConnection(session, {})
    conn.execute(text("CREATE TEMPORARY VIEW events AS SELECT CAST(a AS VARCHAR) AS b FROM t"))
    conn.execute(text("DROP VIEW IF EXISTS events"))
    assert session.log == [
        ("sql", ("SELECT CAST(a AS STRING) AS b FROM t", None)),
        ("view", "events"),
        ("drop view", "events"),
    ]
    assert conn.has_table("sources") and not conn.has_table("offline_evaluations")


@needs_sqlglot
def test_own_tables_are_written_whole_with_typed_parameters() -> None:
    """A Parquet table takes no DELETE: the rows are written back by one INSERT
    OVERWRITE whose values are bound by Spark and cast to the column types."""
    from datetime import datetime

    from abeval.store.spark import own_tables

    session = FakeSession([], [])
    conn = SparkConnection(session, {})
    at = datetime(2026, 1, 2, 3, 4, 5)
    row = {"name": "lake", "table_ref": "lake.events", "mapping": "{}"}
    own_tables.write_all(conn, "sources", [{**row, "created_at": at, "updated_at": at}])
    own_tables.write_all(conn, "sources", [])
    created = (
        "CREATE TABLE IF NOT EXISTS sources (name STRING, table_ref STRING, mapping STRING, "
        "created_at TIMESTAMP_NTZ, updated_at TIMESTAMP_NTZ) USING PARQUET"
    )
    overwrite = (
        "INSERT OVERWRITE TABLE sources VALUES (CAST(:name_0 AS STRING), "
        "CAST(:table_ref_0 AS STRING), CAST(:mapping_0 AS STRING), "
        "CAST(:created_at_0 AS TIMESTAMP_NTZ), CAST(:updated_at_0 AS TIMESTAMP_NTZ))"
    )
    params = {
        "name_0": "lake",
        "table_ref_0": "lake.events",
        "mapping_0": "{}",
        "created_at_0": "2026-01-02 03:04:05",
        "updated_at_0": "2026-01-02 03:04:05",
    }
    assert session.log == [
        ("sql", (created, None)),
        ("sql", (overwrite, params)),
        ("sql", (created, None)),
        ("sql", ("TRUNCATE TABLE sources", None)),
    ]


class _Builder:
    def __init__(self, session: FakeSession) -> None:
        self.session = session

    def remote(self, url: str) -> _Builder:
        return self

    def create(self) -> FakeSession:
        return self.session


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> FakeSession:
    """``open_store("sc://...")`` on a fake session whose database has abeval's tables."""
    import sys
    import types

    from abeval.store.spark import store

    session = FakeSession([], [])
    session.stop = lambda: None  # type: ignore[attr-defined]
    module = types.ModuleType("pyspark.sql.connect.session")
    module.SparkSession = types.SimpleNamespace(builder=_Builder(session))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql.connect.session", module)
    monkeypatch.setattr(store, "_first_contact", lambda _: set(store.TABLES))
    return session


@pytest.mark.parametrize(
    "args",
    [
        ["experiment", "set", "x", "--control", "a", "--db", "sc://h:1/;token=s3cret"],
    ],
)
def test_a_command_that_changes_settings_stops_when_it_begins_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_spark: FakeSession, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.csv").write_text("experiment,arm,user_id,ts,event_type\n")
    result = runner.invoke(app, args)
    message = (
        "--db sc://h:1/;token=***: on a Spark store abeval loads events (ingest), reads "
        "them (experiments, report, agreement) and records sources and offline evaluations "
        "in this version; change experiment settings with DuckDB or PostgreSQL"
    )
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv"]  # nothing written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["report", "-e", "x", "--db", "spark://h:7077"],
            "--db spark://h:7077 is a Spark master; abeval talks to a Spark Connect server: "
            "use sc://HOST:15002",
        ),
    ],
)
def test_what_a_spark_store_cannot_do_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.csv").write_text("experiment,arm,user_id,ts,event_type\n")
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv"]  # nothing written


def test_without_pyspark_the_fix_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyspark.sql.connect.session", None)
    result = runner.invoke(app, ["experiments", "--db", "sc://127.0.0.1:1"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: cannot open the store sc://127.0.0.1:1: Spark Connect")
    assert result.stderr.endswith("is missing); install abeval[spark]\n")
