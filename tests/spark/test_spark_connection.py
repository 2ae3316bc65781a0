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
from abeval.store.backends.spark.connection import SparkConnection

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


class VersionedSession:
    """A session whose catalog holds tables and views by name, logging each step
    of an own-table write in order."""

    def __init__(self, tables: dict[str, str] | None = None) -> None:
        self.log: list[str] = []
        self.kinds: dict[str, str] = dict(tables or {})  # name -> MANAGED or VIEW
        self.reads: dict[str, str] = {}  # view -> the version it names
        self.catalog = self

    def tableExists(self, name: str) -> bool:
        return name in self.kinds

    def getTable(self, name: str) -> Any:
        import types

        return types.SimpleNamespace(tableType=self.kinds[name])

    def sql(self, statement: str, args: Any = None) -> Any:
        import re
        import types

        rows: list[tuple] = []
        if statement.startswith("SHOW TABLES LIKE"):
            prefix = statement.split("'")[1].rstrip("*")
            rows = [("default", n, False) for n in self.kinds if n.startswith(prefix)]
        elif statement.startswith("SHOW TBLPROPERTIES"):
            name = statement.split()[2]
            rows = [("abeval.version", self.reads[name])] if name in self.reads else []
        else:
            self.log.append(re.sub(r"__v(\d+)_\w{8}", r"__v\1", statement))
            view = re.match(r"CREATE OR REPLACE VIEW (\w+) .*'(\w+)'\) AS", statement)
            if view:
                self.kinds[view.group(1)] = "VIEW"
                self.reads[view.group(1)] = view.group(2)
            dropped = re.match(r"DROP TABLE IF EXISTS (\w+)", statement)
            if dropped:
                self.kinds.pop(dropped.group(1), None)
            renamed = re.match(r"ALTER TABLE (\w+) RENAME TO (\w+)", statement)
            if renamed:
                self.kinds[renamed.group(2)] = self.kinds.pop(renamed.group(1))
        return types.SimpleNamespace(collect=lambda: rows)

    def createDataFrame(self, rows: list[tuple], schema: str) -> Any:
        session = self

        class Frame:
            def selectExpr(self, *exprs: str) -> Any:
                session.log.append(f"upload {len(rows)} rows as {', '.join(exprs[:1])}, ...")
                return self

            @property
            def write(self) -> Any:
                return self

            def format(self, name: str) -> Any:
                return self

            def mode(self, mode: str) -> Any:
                self.how = mode
                return self

            def saveAsTable(self, name: str) -> None:
                import re

                session.kinds[name] = "MANAGED"
                short = re.sub(r"_\w{8}$", "", name)
                session.log.append(f"write {short} ({self.how})")

        return Frame()


def test_own_tables_are_replaced_by_a_new_version_and_one_pointer_swap() -> None:
    """A write never touches the version readers read: the new version is written
    (mode error) before the view is pointed at it, and only then are the others
    dropped; an earlier abeval's plain table becomes version 0 first."""
    from datetime import datetime

    from abeval.store.backends.spark import own_tables

    session = VersionedSession({"sources": "MANAGED"})
    conn = SparkConnection(session, {})
    at = datetime(2026, 1, 2, 3, 4, 5)
    row = {"name": "lake", "table_ref": "lake.events", "mapping": "{}"}
    own_tables.write_all(conn, "sources", [{**row, "created_at": at, "updated_at": at}])
    own_tables.write_all(conn, "sources", [])
    view = "CREATE OR REPLACE VIEW sources TBLPROPERTIES ('abeval.version' = '{v}') AS SELECT "
    columns = "name, table_ref, mapping, created_at, updated_at FROM {v}"
    upload = "upload {n} rows as CAST(name AS STRING) AS name, ..."
    assert session.log == [
        "ALTER TABLE sources RENAME TO sources__v0_legacy",
        (view + columns).format(v="sources__v0_legacy"),
        upload.format(n=1),
        "write sources__v1 (error)",
        (view + columns).format(v="sources__v1"),
        "DROP TABLE IF EXISTS sources__v0_legacy",
        upload.format(n=0),
        "write sources__v2 (error)",
        (view + columns).format(v="sources__v2"),
        "DROP TABLE IF EXISTS sources__v1",
    ]
    assert sorted(n[:11] for n in session.kinds) == ["sources", "sources__v2"]


class _ChannelBuilder:
    def __init__(self, url: str, channelOptions: list[tuple[str, Any]]) -> None:
        self.params: dict[str, str] = {}

    def getDefault(self, key: str, default: Any) -> Any:
        return self.params.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.params[key] = value


class _Builder:
    def __init__(self, session: FakeSession) -> None:
        self.session = session

    def remote(self, url: str) -> _Builder:
        return self

    def channelBuilder(self, builder: _ChannelBuilder) -> _Builder:
        return self

    def create(self) -> FakeSession:
        return self.session


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> FakeSession:
    """``open_store("sc://...")`` on a fake session whose database has abeval's tables."""
    import sys
    import types

    from abeval.store.backends.spark import database as store

    session = FakeSession([], [])
    session.stop = lambda: None  # type: ignore[attr-defined]
    module = types.ModuleType("pyspark.sql.connect.session")
    module.SparkSession = types.SimpleNamespace(builder=_Builder(session))  # type: ignore[attr-defined]
    module.DefaultChannelBuilder = _ChannelBuilder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql.connect.session", module)
    monkeypatch.setattr(store, "_first_contact", lambda _: set(store.TABLES))
    return session


def test_a_transaction_is_refused_with_one_line_and_the_token_masked(
    fake_spark: FakeSession,
) -> None:
    """Spark has no transaction: a write that asks for one (none of the commands
    does since experiment settings are recorded on Spark) stops before anything."""
    from abeval.errors import StoreError
    from abeval.store import open_store

    message = (
        "db sc://h:1/;token=***: on a Spark store abeval loads events (ingest), reads "
        "them (experiments, report, agreement) and records sources, offline evaluations, "
        "team-defined metrics and experiment settings in this version; run this command on "
        "a DuckDB or PostgreSQL store"
    )
    with (
        open_store("sc://h:1/;token=s3cret") as store,
        pytest.raises(StoreError) as caught,
        store.begin(),
    ):
        pass
    assert str(caught.value) == message and caught.value.parameters == ("db",)
    assert fake_spark.log == []


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
