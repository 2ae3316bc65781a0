"""abeval's own small tables on a Spark store: ``sources``, ``offline_evaluations``,
``target_files``, ``target_propensities`` and ``metric_definitions``
(docs/design/spark.md §10).

No migration runs on Spark, so each table is created by the first write that
needs it (``CREATE TABLE IF NOT EXISTS ... USING parquet`` in the session's
current database, the columns of migrations 0003, 0004, 0006 and 0009 without their
keys). The report reads ``target_files`` and ``target_propensities`` when they
exist; ``abeval experiment set`` (which records them) changes an experiment's
settings, refused on Spark in this version.
A Parquet table takes no ``DELETE`` or ``UPDATE``: a write reads the table's
few rows, changes them in Python and writes them all back with one
``INSERT OVERWRITE`` (or ``TRUNCATE`` when none are left). Spark runs that as
one job; there is no transaction around it, and no other writer is expected
(these tables hold a handful of rows written by hand-run commands).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from abeval.store.migrate import has_own_table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store

#: Column -> SQL type (DuckDB's spelling; the dialect writes Spark's), in order.
SOURCES = {
    "name": "VARCHAR",
    "table_ref": "VARCHAR",
    "mapping": "VARCHAR",
    "created_at": "TIMESTAMP",
    "updated_at": "TIMESTAMP",
}
OFFLINE_EVALUATIONS = {
    "evaluation_id": "VARCHAR",
    "experiment": "VARCHAR",
    "arm": "VARCHAR",
    "metric": "VARCHAR",
    "value": "DOUBLE PRECISION",
    "se": "DOUBLE PRECISION",
    "users": "BIGINT",
    "baseline_arm": "VARCHAR",
    "difference": "DOUBLE PRECISION",
    "difference_se": "DOUBLE PRECISION",
    "difference_low": "DOUBLE PRECISION",
    "difference_high": "DOUBLE PRECISION",
    "paired_users": "BIGINT",
    "conventions": "VARCHAR",
    "fingerprints": "VARCHAR",
    "recorded_at": "TIMESTAMP",
}
TARGET_PROPENSITIES = {
    "experiment": "VARCHAR",
    "arm": "VARCHAR",
    "request_id": "VARCHAR",
    "item_id": "VARCHAR",
    "position": "INTEGER",
    "probability": "DOUBLE PRECISION",
    "probability_given_above": "DOUBLE PRECISION",
}
TARGET_FILES = {
    "experiment": "VARCHAR",
    "file": "VARCHAR",
    "checksum": "VARCHAR",
    "rows_recorded": "BIGINT",
    "recorded_at": "TIMESTAMP",
}
METRIC_DEFINITIONS = {
    "name": "VARCHAR",
    "definition": "VARCHAR",
    "source": "VARCHAR",
    "recorded_at": "TIMESTAMP",
}
TABLES: dict[str, dict[str, str]] = {
    "sources": SOURCES,
    "metric_definitions": METRIC_DEFINITIONS,
    "offline_evaluations": OFFLINE_EVALUATIONS,
    "target_propensities": TARGET_PROPENSITIES,
    "target_files": TARGET_FILES,
}


def create_sql(table: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for one of :data:`TABLES`, as Parquet."""
    columns = ", ".join(f"{c} {t}" for c, t in TABLES[table].items())
    return f"CREATE TABLE IF NOT EXISTS {table} ({columns}) USING parquet"


def ensure(conn: Connection, table: str) -> None:
    from sqlalchemy import text

    conn.execute(text(create_sql(table)))


def read_rows(conn: Connection, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as {column: value} (empty when it does not exist)."""
    from sqlalchemy import text

    if not has_own_table(conn, table):
        return []
    columns = list(TABLES[table])
    rows = conn.execute(text(f"SELECT {', '.join(columns)} FROM {table}")).fetchall()
    return [dict(zip(columns, r, strict=True)) for r in rows]


def overwrite_sql(table: str, count: int) -> str:
    """``INSERT OVERWRITE`` of ``count`` rows bound as ``:c_i`` parameters, each cast
    to its column's type (so that a NULL has one)."""
    types = TABLES[table]
    rows = ", ".join(
        "(" + ", ".join(f"CAST(:{c}_{i} AS {t})" for c, t in types.items()) + ")"
        for i in range(count)
    )
    return f"INSERT OVERWRITE TABLE {table} VALUES {rows}"


def write_all(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Make ``rows`` the whole content of ``table`` (created when missing).
    Timestamps are sent as ISO text and cast by Spark (zone-less, as stored)."""
    from sqlalchemy import text

    ensure(conn, table)
    if not rows:
        conn.execute(text(f"TRUNCATE TABLE {table}"))
        return
    params = {
        f"{c}_{i}": v.isoformat(sep=" ") if isinstance(v, datetime) else v
        for i, row in enumerate(rows)
        for c, v in row.items()
    }
    conn.execute(text(overwrite_sql(table, len(rows))), params)


def replace_rows(
    conn: Connection,
    table: str,
    keep: Callable[[dict[str, Any]], bool],
    rows: Sequence[Mapping[str, Any]],
) -> None:
    """The table's rows that ``keep`` keeps, and ``rows``, as its whole content:
    what ``DELETE ... WHERE NOT keep`` then ``INSERT rows`` do elsewhere."""
    kept = [r for r in read_rows(conn, table) if keep(r)]
    write_all(conn, table, [*kept, *rows])


@contextmanager
def writing(store: Store) -> Iterator[Connection]:
    """A connection to write abeval's own tables of a Spark store (no transaction)."""
    from abeval.store.spark.store import SparkStore

    assert isinstance(store, SparkStore)
    with store.own_tables() as conn:
        yield conn
