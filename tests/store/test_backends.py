"""One backend per engine (abeval/store/backends): no engine-name or URL-prefix
branch outside it, each engine and each URL finds its own, every backend offers
the same operations, and what differs gives the same rows on every engine the
suite can run (DuckDB, PostgreSQL, SQLite for the portable base, and Spark in
tests/spark/test_spark_backend.py, which runs the ``check_*`` below on a cluster)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection

from abeval.store import open_store
from abeval.store.backends import Backend, backend_for_url, backend_named, backend_of
from abeval.store.backends.duckdb.backend import DuckDBBackend
from abeval.store.backends.postgresql.backend import PostgresBackend
from abeval.store.backends.spark.backend import SparkBackend
from abeval.store.schema import Column

ROOT = Path(__file__).resolve().parents[2] / "abeval"
#: Where an engine's name or a URL's scheme may be tested: the backends only.
OWNER = "store/backends/"
BRANCH = re.compile(r"\bdialect\s*(==|!=|\bin\b)|dialect\.name|\bis_duckdb\b")
#: A test of a URL's prefix: ``url.startswith("duckdb")``, ``"sc://" in url``,
#: ``drivername.startswith(...)``.
URL_PREFIX = re.compile(
    r"""startswith\(\(?\s*["'](duckdb|postgres|sc:|spark:|sqlite)|["'](sc|spark)://["']"""
    r"""|drivername"""
)
ENGINES = (DuckDBBackend(), PostgresBackend(), SparkBackend())


def _outside_the_backends(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OWNER):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"abeval/{rel}:{number}: {line.strip()}")
    return found


def test_no_engine_branch_outside_the_backends() -> None:
    found = _outside_the_backends(BRANCH)
    assert found == [], "ask store.backend / backend_of(conn) instead:\n" + "\n".join(found)


def test_no_url_prefix_branch_outside_the_backends() -> None:
    found = _outside_the_backends(URL_PREFIX)
    assert found == [], "ask backend_for_url(url) instead:\n" + "\n".join(found)


def test_the_url_guard_sees_a_prefix() -> None:
    for line in (
        'if url.startswith("duckdb"):',
        "if url.startswith(('sc://', 'spark://')):",
        'url.startswith("postgresql+psycopg")',
        'if parsed.drivername.startswith("duckdb"):',
        'SCHEME = "sc://"',
    ):
        assert URL_PREFIX.search(line), line
    assert not URL_PREFIX.search('name.startswith("abeval_")')


def test_the_guard_sees_a_branch() -> None:
    for line in (
        'if store.dialect == "spark":',
        'if conn.dialect.name in ("duckdb", "spark"):',
        "if store.is_duckdb:",
        "dialect != 'postgresql'",
    ):
        assert BRANCH.search(line), line
    assert not BRANCH.search("from abeval.store.backends.spark.dialect import to_spark")


def test_each_url_finds_its_engines_backend_and_only_its() -> None:
    urls = {
        "duckdb": ["duckdb:////data/s.duckdb", "duckdb:///:memory:"],
        "postgresql": ["postgresql+psycopg://u:p@h/db", "postgresql://h/db"],
        "spark": ["sc://127.0.0.1:15002", "sc://h:1/;token=x", "spark://h:7077"],
    }
    for backend in ENGINES:
        for name, examples in urls.items():
            for url in examples:
                assert backend.owns_url(url) == (backend.name == name), (backend, url)
                assert backend_for_url(url) is backend_named(name)
    other = backend_for_url("sqlite+pysqlite:///x.sqlite")
    assert type(other) is Backend and other.name == "sqlite"


def test_every_backend_offers_the_bases_operations() -> None:
    """The same contract for every engine: an override takes the base's parameters."""
    for backend in ENGINES:
        for name, base in inspect.getmembers(Backend, inspect.isfunction):
            if name.startswith("__"):
                continue
            mine = getattr(type(backend), name)
            if mine is not base:
                assert list(inspect.signature(mine).parameters) == list(
                    inspect.signature(base).parameters
                ), (backend, name)


def test_a_url_is_shown_without_its_secrets() -> None:
    assert DuckDBBackend().display_url("duckdb:////data/s.duckdb") == "/data/s.duckdb"
    assert PostgresBackend().display_url("postgresql+psycopg://bob:pw@h/db") == (
        "postgresql+psycopg://bob:***@h/db"
    )
    assert SparkBackend().display_url("sc://h:1/;token=s3cret") == "sc://h:1/;token=***"


def test_each_engine_finds_its_backend(tmp_path: Path) -> None:
    assert isinstance(backend_named("duckdb"), DuckDBBackend)
    assert isinstance(backend_named("postgresql"), PostgresBackend)
    assert isinstance(backend_named("spark"), SparkBackend)
    other = backend_named("sqlite")
    assert type(other) is Backend and other.name == "sqlite"
    assert not other.temporary_tables and other.runs_migrations
    assert not SparkBackend.runs_migrations
    with open_store(str(tmp_path / "s.duckdb")) as store, store.connect() as conn:
        assert isinstance(store.backend, DuckDBBackend)
        assert backend_of(conn) is store.backend


# --- the same rows on every engine ------------------------------------------------------

ROWS: list[tuple[Any, ...]] = [
    (None, "r1", "i1", 1, 0.5, None),
    ("B", "r1", "i2", 2, 0.25, 0.5),
    (None, "r2", "i1", 1, 1.0, None),
]
NAMES = ("arm", "request_id", "item_id", "position", "probability", "probability_given_above")
KINDS = ["text"] * 3 + ["integer"] + ["double"] * 2
COLUMNS = tuple(Column(n, k) for n, k in zip(NAMES, KINDS, strict=True))


@pytest.fixture
def conn(any_engine: Connection) -> Connection:
    return any_engine


def _all(conn: Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(text(sql)).fetchall()]


def test_rows_from_python_load_and_fill(conn: Connection) -> None:
    check_rows_load_and_fill(conn)


def check_rows_load_and_fill(conn: Connection) -> None:
    """Rows from Python become a temporary table, and a column's NULLs are filled."""
    backend = backend_of(conn)
    assert backend.name == conn.dialect.name
    backend.load_rows(conn, "abeval_t", COLUMNS, ROWS)
    assert _all(conn, "SELECT * FROM abeval_t ORDER BY request_id, item_id") == ROWS
    # arm filled where NULL: 'A' for request r1, 'C' for the others
    value = "CASE WHEN request_id = :r THEN :a ELSE :c END"
    params = {"r": "r1", "a": "A", "c": "C"}
    backend.fill_nulls(conn, "abeval_t", "arm", value, NAMES, params)
    got = _all(conn, "SELECT arm, request_id, item_id FROM abeval_t ORDER BY request_id, item_id")
    assert got == [("A", "r1", "i1"), ("B", "r1", "i2"), ("C", "r2", "i1")]


def test_sparks_fill_without_update_gives_the_same_rows(tmp_path: Path) -> None:
    """Spark's way (build the filled rows, swap them in) is plain SQL: on DuckDB it
    must give what DuckDB's UPDATE gives."""
    engine = create_engine(f"duckdb:///{tmp_path / 'f.duckdb'}")
    results = []
    with engine.begin() as conn:
        for backend in (DuckDBBackend(), SparkBackend()):
            conn.execute(text("DROP TABLE IF EXISTS abeval_t"))
            DuckDBBackend().load_rows(conn, "abeval_t", COLUMNS, ROWS)
            backend.fill_nulls(conn, "abeval_t", "arm", ":x", NAMES, {"x": "Z"})
            results.append(_all(conn, "SELECT * FROM abeval_t ORDER BY request_id, item_id"))
    engine.dispose()
    assert results[0] == results[1]
    assert [r[0] for r in results[0]] == ["Z", "B", "Z"]
    assert [r[1:] for r in results[0]] == [r[1:] for r in ROWS]


def test_rows_are_replaced_by_key(conn: Connection) -> None:
    backend = backend_of(conn)
    conn.execute(text("CREATE TABLE own (name TEXT, n INTEGER)"))
    conn.execute(
        text("INSERT INTO own VALUES (:a, :n)"),
        [{"a": "x", "n": 1}, {"a": "y", "n": 2}, {"a": "z", "n": 3}],
    )
    backend.replace_rows(conn, "own", "name", ["x", "y"], [{"name": "x", "n": 10}])
    assert _all(conn, "SELECT name, n FROM own ORDER BY name") == [("x", 10), ("z", 3)]
    backend.replace_rows(conn, "own", "name", ["z"], [])
    assert _all(conn, "SELECT name, n FROM own ORDER BY name") == [("x", 10)]
    conn.execute(text("CREATE TABLE src (name TEXT, n INTEGER)"))
    conn.execute(text("INSERT INTO src VALUES ('x', 7), ('x', 8), ('w', 9)"))
    backend.replace_by_query(
        conn,
        "own",
        "name",
        ("name", "n"),
        "SELECT name, n FROM src WHERE name = :name",
        {"name": "x"},
    )
    assert _all(conn, "SELECT name, n FROM own ORDER BY n") == [("x", 7), ("x", 8)]


def test_json_objects_and_their_keys(conn: Connection) -> None:
    if backend_of(conn).name == "sqlite":
        pytest.skip("SQLite's JSON functions are not abeval's portable SQL")
    check_json_objects_and_their_keys(conn)


def check_json_objects_and_their_keys(conn: Connection, keys_in_sql: bool = True) -> None:
    """A JSON object built in SQL, and the keys of JSON texts in SQL (else no query:
    the caller reads them in Python)."""
    backend = backend_of(conn)
    pairs = "'b', 'x', 'a', CAST(2 AS VARCHAR)"
    built = conn.execute(text(f"SELECT CAST({backend.json_object(pairs)} AS VARCHAR)")).scalar()
    assert json.loads(str(built)) == {"b": "x", "a": "2"}
    sql = backend.json_keys_sql("(SELECT DISTINCT a FROM attrs WHERE a IS NOT NULL) d")
    if not keys_in_sql:
        assert sql is None
        return
    assert sql is not None
    conn.execute(text("CREATE TABLE attrs (a TEXT)"))
    objects = ['{"u": 1, "v": 2}', '{"v": 3, "w": null}', None]
    conn.execute(text("INSERT INTO attrs VALUES (:a)"), [{"a": o} for o in objects])
    expected = sorted({k for o in objects if o for k in json.loads(o)})
    assert sorted(str(r[0]) for r in conn.execute(text(sql))) == expected


def test_a_timestamp_with_a_zone_reads_as_utc(conn: Connection) -> None:
    backend = backend_of(conn)
    if backend.name == "sqlite":
        pytest.skip("SQLite has no timestamp with a zone")
    conn.execute(text("SET TimeZone = 'America/New_York'"))
    column = "CAST('2024-03-10 01:30:00-05' AS TIMESTAMPTZ)"
    got = conn.execute(text(f"SELECT CAST({backend.utc_timestamp(column)} AS VARCHAR)")).scalar()
    assert str(got) == "2024-03-10 06:30:00"
