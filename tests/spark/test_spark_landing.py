"""``abeval ingest --db sc://...`` without a cluster: the tables' DDL and the order
of the steps, against a fake Spark session that records what it is asked.

What must hold: abeval's Spark tables have the columns and types of a migrated
DuckDB store, and their DDL passes the dialect layer's check; a file is checked
by DuckDB before Spark is asked anything (a bad row costs no Spark statement);
rows only reach Spark as uploaded Arrow tables written as Parquet (never an
``INSERT``), every file is written before the one ``ADD PARTITION`` of
``events`` that commits the ingest, and the ``ingests`` partition comes last; the
summary is DuckDB's. The same steps on a real cluster: test_spark_ingest.py.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.backends.spark import database as spark_store
from abeval.store.backends.spark.backend import SparkBackend
from abeval.store.backends.spark.lock import LOCK
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sqlglot") is None, reason="needs sqlglot (pip install -e '.[test]')"
)
runner = CliRunner()
URL = "sc://h:1/;token=s3cret"
SHOWN = "sc://h:1/;token=***"
DUCK_TYPES = {
    "VARCHAR": "STRING",
    "TIMESTAMP": "TIMESTAMP_NTZ",
    "INTEGER": "INT",
    "DOUBLE": "DOUBLE",
    "BIGINT": "BIGINT",
}


def _migrated(folder: Path, tables: list[str]) -> dict[str, list[tuple[str, str]]]:
    """The columns of ``tables`` in a migrated DuckDB store, with Spark's type names."""
    import duckdb

    with open_store(str(folder / "s.duckdb")):
        pass  # the migrations ran
    con = duckdb.connect(str(folder / "s.duckdb"), read_only=True)
    try:
        return {
            t: [(r[0], DUCK_TYPES[r[1]]) for r in con.execute(f"DESCRIBE {t}").fetchall()]
            for t in tables
        }
    finally:
        con.close()


def test_the_spark_tables_have_the_columns_of_the_migrations(tmp_path: Path) -> None:
    from abeval.store.backends.spark.schema import COLUMNS, PARTITION, PARTITIONED, create_table_sql

    migrated = _migrated(tmp_path, list(COLUMNS))
    for table, spark_columns in COLUMNS.items():
        duck = migrated[table]
        if table in PARTITIONED:  # Spark keeps the partition column last
            duck = [c for c in duck if c[0] != PARTITION] + [(PARTITION, "BIGINT")]
        assert list(spark_columns) == duck, table
        sql = create_table_sql(table, "s3a://bucket/it's/" + table)
        assert sql.startswith(f"CREATE TABLE IF NOT EXISTS {table} (")
        assert ("PARTITIONED BY (ingest_id)" in sql) == (table in PARTITIONED)
        assert sql.endswith(
            f"LOCATION 's3a://bucket/it\\'s/{table}" + ("/v0'" if table == "experiments" else "'")
        )


def test_the_own_tables_have_the_columns_of_the_migrations(tmp_path: Path) -> None:
    """``sources``, ``offline_evaluations``, ``target_propensities``,
    ``target_files`` and ``metric_definitions`` on Spark
    (abeval.store.backends.spark.own_tables) have the columns and types of migrations 0003,
    0004, 0006 and 0009, in order."""
    from abeval.store.backends.spark.own_tables import TABLES

    migrated = _migrated(tmp_path, list(TABLES))
    for table, spark_columns in TABLES.items():
        assert list(spark_columns.items()) == migrated[table], table


def test_ddl_that_does_not_read_back_is_refused() -> None:
    from abeval.store.backends.spark.dialect import DialectError, spark_native

    with pytest.raises(DialectError) as caught:
        spark_native("CREATE TABLE t (a STRING) USING parquet")
    assert "does not read back the same" in caught.value.message
    with pytest.raises(DialectError):
        spark_native("MSCK REPAIR TABLE t; SELECT 1")


class FakeWriter:
    def __init__(self, log: list[tuple[str, Any]], rows: int) -> None:
        self.log, self.rows, self.how = log, rows, ""

    def mode(self, how: str) -> FakeWriter:
        self.how = how
        return self

    def parquet(self, path: str) -> None:
        self.log.append(("write", (path, self.how, self.rows)))

    def format(self, kind: str) -> FakeWriter:
        return self

    def saveAsTable(self, name: str) -> None:
        self.log.append(("write", (name, self.how, self.rows)))


class FakeFrame:
    def __init__(self, log: list[tuple[str, Any]], rows: list[tuple], n: int = 0) -> None:
        self.log, self.rows, self.n = log, rows, n
        self.columns = [f"c{i}" for i in range(len(rows[0]))] if rows else []

    @property
    def write(self) -> FakeWriter:
        return FakeWriter(self.log, self.n)

    def collect(self) -> list[tuple]:
        return self.rows

    def selectExpr(self, *exprs: str) -> FakeFrame:
        return self

    @property
    def schema(self) -> list[str]:
        return self.columns


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class FakeReader:
    def __init__(self, held: set[str]) -> None:
        self.held = held

    def parquet(self, path: str) -> FakeFrame:
        if path not in self.held:
            raise RuntimeError(f"[PATH_NOT_FOUND] Path does not exist: {path}.")
        return FakeFrame([], [("x",)])


class FakeSession:
    """Answers what the landing asks: a Hive catalog, the tables' descriptions, no
    partitions, no rows; ``held`` are folders that hold Parquet files already."""

    def __init__(self, catalog: str = "hive", held: set[str] | None = None) -> None:
        self.log: list[tuple[str, Any]] = []
        self.conf = FakeConf({"spark.sql.catalogImplementation": catalog})
        self.read = FakeReader(held or set())
        self.lock: list[tuple[str, str]] = []

    def sql(self, sql: str, args: dict[str, Any] | None = None) -> FakeFrame:
        self.log.append(("sql", sql))
        if LOCK in sql:  # the writer lock: a view whose properties name its holder
            if sql.startswith("CREATE VIEW"):
                self.lock = re.findall(r"'([\w.]+)' = '([^']*)'", sql)
            elif sql.startswith("DROP VIEW"):
                self.lock = []
            return FakeFrame(self.log, list(self.lock))
        described = re.fullmatch(r"DESCRIBE TABLE EXTENDED (\w+)", sql)
        if described:
            name = described.group(1)
            where = f"/wh/{name}" + ("/v0" if name == "experiments" else "")
            parts = [("# Partition Information", "", ""), ("# col_name", "", "")]
            parts += [("ingest_id", "bigint", None), ("", "", "")]
            rows = [("a", "string", None), *(parts if name != "experiments" else [])]
            return FakeFrame(self.log, [*rows, ("Location", where, "")])
        return FakeFrame(self.log, [])

    def createDataFrame(self, data: Any, schema: str) -> FakeFrame:
        n = data.num_rows if hasattr(data, "num_rows") else len(data)
        self.log.append(("upload", n))
        return FakeFrame(self.log, [], n)

    def stop(self) -> None:
        pass


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeSession:
    """``--db sc://...`` opens a store on a fake session with no abeval table yet."""
    session = FakeSession()

    def open_spark(
        url: str, backend: SparkBackend, *, read_only: bool, **_: Any
    ) -> spark_store.SparkDatabase:
        return spark_store.SparkDatabase(session, url, read_only, backend, set())

    monkeypatch.setattr(spark_store, "open_spark_store", open_spark)
    monkeypatch.setenv("ABEVAL_SPARK_WAREHOUSE", "/wh")
    return session


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("landing") / "events.csv"
    write_events(SimulationConfig(users=30, seed=1, days=1, pre_period_days=0), path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n")  # one row repeated
    return path


def test_rows_land_as_files_and_one_partition_commits_them(
    fake: FakeSession, events: Path, tmp_path: Path
) -> None:
    with open_store(str(tmp_path / "s.duckdb")) as duck:
        expected = ingest_file(duck, events)
    with open_store(URL) as store:
        got = ingest_file(store, events)
    same = ("rows_read", "inserted", "repeated_in_file", "already_stored", "notes", "ingest_id")
    assert {k: getattr(got, k) for k in same} == {k: getattr(expected, k) for k in same}
    log = fake.log
    statements = [s for kind, s in log if kind == "sql"]
    assert not [s for s in statements if re.match(r"\s*(INSERT|UPDATE|DELETE|MERGE)", s, re.I)]
    assert [s.split(" (")[0] for s in statements if s.startswith("CREATE TABLE")] == [
        "CREATE TABLE IF NOT EXISTS ingests",
        "CREATE TABLE IF NOT EXISTS events",
        "CREATE TABLE IF NOT EXISTS experiments",
        "CREATE TABLE IF NOT EXISTS rejected_rows",
    ]
    commit = log.index(
        ("sql", "ALTER TABLE events ADD PARTITION(ingest_id = 1) LOCATION '/wh/events/ingest_id=1'")
    )
    writes = [(i, x) for i, (kind, x) in enumerate(log) if kind == "write"]
    # The rows and the ingest's record are written before the commit, the new
    # experiments after it (they are computed from the committed rows).
    assert [x for i, x in writes if i < commit] == [
        ("/wh/events/ingest_id=1", "overwrite", expected.inserted),
        ("/wh/ingests/ingest_id=1", "overwrite", 1),
    ]
    after = [x for i, x in writes if i > commit]
    assert len(after) == 1 and re.fullmatch(r"experiments__v1_[0-9a-f]{8}", after[0][0])
    assert after[0][1] == "error"  # a new table, never one a reader may be reading
    tail = [s for s in statements[statements.index(log[commit][1]) :] if s.startswith("ALTER")]
    assert tail == [
        log[commit][1],
        f"ALTER TABLE experiments SET LOCATION '/wh/{after[0][0]}'",
        "ALTER TABLE ingests ADD PARTITION(ingest_id = 1) LOCATION '/wh/ingests/ingest_id=1'",
    ]
    assert sum(n for kind, n in log if kind == "upload") == expected.inserted + 1
    # one writer: the lock is claimed before the first statement and dropped after the last
    assert statements[0].startswith(f"CREATE VIEW {LOCK} TBLPROPERTIES (")
    assert statements[-1] == f"DROP VIEW IF EXISTS {LOCK}" and fake.lock == []


def test_a_bad_row_is_reported_before_spark_is_asked_anything(
    fake: FakeSession, events: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.csv"
    lines = events.read_text().splitlines()
    cells = lines[2].split(",")
    cells[3] = "not a time"
    bad.write_text("\n".join([lines[0], lines[1], ",".join(cells)]) + "\n")
    said = []
    for db in (str(tmp_path / "s.duckdb"), URL):
        result = runner.invoke(app, ["ingest", str(bad), "--db", db])
        assert (result.exit_code, result.stdout) == (1, "")
        said.append(result.stderr)
    assert said[0] == said[1] and said[0].startswith(f"Error: {bad}:3:ts: ")
    assert fake.log == []


@pytest.mark.parametrize(
    ("session", "message"),
    [
        (
            FakeSession(catalog="in-memory"),
            f"the Spark Connect server of {SHOWN} keeps its catalog in memory, so tables loaded "
            "now would vanish when it restarts; start it with --conf "
            "spark.sql.catalogImplementation=hive (or a metastore) before abeval ingest",
        ),
        (
            FakeSession(held={"/wh/events"}),
            "the folder /wh/events holds the files of an earlier table; abeval creates its "
            "tables in new folders: set ABEVAL_SPARK_WAREHOUSE to another folder, or register "
            "the old tables in the catalog again",
        ),
    ],
)
def test_a_catalog_that_forgets_and_a_used_folder_are_refused(
    fake: FakeSession, events: Path, session: FakeSession, message: str
) -> None:
    fake.conf, fake.read = session.conf, session.read
    result = runner.invoke(app, ["ingest", str(events), "--db", URL])
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    said = [s for kind, s in fake.log if kind == "sql" and LOCK not in s]
    assert not [s for s in said if not s.startswith(("SELECT", "SHOW"))] and fake.lock == []
