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
