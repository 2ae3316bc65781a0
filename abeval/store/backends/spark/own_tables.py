"""abeval's own small tables on a Spark store: ``sources``, ``offline_evaluations``,
``target_files``, ``target_propensities`` and ``metric_definitions``
(docs/design/spark.md §10).

No migration runs on Spark, so each table is created by the first write that
needs it, in the session's current database, with the columns of
:mod:`abeval.store.schema` (those of migrations 0003, 0004, 0006 and 0009)
without their keys.

**Versions and one pointer.** A Parquet table takes no ``DELETE``, ``UPDATE`` or
transaction, and ``INSERT OVERWRITE`` deletes the old files before the new ones
are committed. So what a reader names, ``sources``, is a view, and each content
is a managed Parquet table of its own, ``sources__v<N>_<random>``:

1. the new content is written whole as a new version (``saveAsTable``, mode
   ``error``: it never writes into an existing table); a fault here leaves a
   version no view names, and the previous content readable;
2. ``CREATE OR REPLACE VIEW sources TBLPROPERTIES ('abeval.version' = name) AS
   SELECT ... FROM name``: one metastore operation, the commit;
3. every other version is dropped (managed tables: their files go with them);
   a fault here leaves garbage that the next successful write drops.

A table made by an earlier abeval (a plain Parquet table) is renamed to the
version ``<table>__v0_legacy`` and a view made for it, the first time it is
written. Writers hold the store's writer lock (:mod:`abeval.store.backends.spark.lock`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from abeval.store.backends.spark.types import SPARK_TYPES
from abeval.store.schema import OWN_TABLES
from abeval.store.schema import TABLES as SCHEMA

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

#: Column -> SQL type (Spark's spelling), in order, of each of abeval's own tables
#: (:data:`abeval.store.schema.OWN_TABLES`).
TABLES: dict[str, dict[str, str]] = {
    t: {c.name: SPARK_TYPES[c.kind] for c in SCHEMA[t].columns} for t in OWN_TABLES
}
#: The view's property that names the version it reads.
VERSION_PROPERTY = "abeval.version"
#: The version an earlier abeval's plain table becomes.
LEGACY = "v0_legacy"
_VERSION = re.compile(r"__v(\d+)_\w+$")
#: The uploaded rows of a write from Python, as a temporary view.
_ROWS = "abeval_own_rows"


def schema(table: str) -> str:
    """The columns of ``table`` as a Spark schema string."""
    return ", ".join(f"{c} {t}" for c, t in TABLES[table].items())


def version_name(table: str, number: int) -> str:
    """A new version's table name: its number, and a random part so that it never
    meets the folder of an earlier write that failed."""
    return f"{table}__v{int(number)}_{uuid.uuid4().hex[:8]}"


def versions(session: Any, table: str) -> list[str]:
    """The version tables of ``table`` in the current database."""
    rows = session.sql(f"SHOW TABLES LIKE '{table}__v*'").collect()
    return sorted(str(r[1]) for r in rows if not r[2] and _VERSION.search(str(r[1])))


def _number(name: str) -> int:
    found = _VERSION.search(name)
    return int(found.group(1)) if found else 0


def current(session: Any, table: str) -> str | None:
    """The version the view ``table`` reads (None: no view)."""
    if not session.catalog.tableExists(table):
        return None
    if session.catalog.getTable(table).tableType != "VIEW":
        return None
    rows = session.sql(f"SHOW TBLPROPERTIES {table} ('{VERSION_PROPERTY}')").collect()
    return str(rows[0][1]) if rows else None


def point(session: Any, table: str, version: str) -> None:
    """The commit: the view ``table`` reads ``version`` (one metastore operation)."""
    columns = ", ".join(TABLES[table])
    session.sql(
        f"CREATE OR REPLACE VIEW {table} TBLPROPERTIES ('{VERSION_PROPERTY}' = '{version}') "
        f"AS SELECT {columns} FROM {version}"
    ).collect()


def ensure(session: Any, table: str) -> str:
    """The view ``table`` and the version it reads, made when missing: an
    earlier abeval's plain table becomes a version; a view lost between the two
    steps of that is made again for the newest version; else an empty version."""
    if session.catalog.tableExists(table):
        if session.catalog.getTable(table).tableType == "VIEW":
            found = current(session, table)
            if found is not None:
                return found
        else:
            session.sql(f"ALTER TABLE {table} RENAME TO {table}__{LEGACY}").collect()
    have = versions(session, table)
    if have:
        newest = max(have, key=_number)
    else:
        newest = version_name(table, 1)
        session.createDataFrame([], schema=schema(table)).write.format("parquet").mode(
            "error"
        ).saveAsTable(newest)
    point(session, table, newest)
    return newest


def publish(session: Any, table: str, frame: Any) -> str:
    """Make the rows of the DataFrame ``frame`` the whole content of ``table``:
    written as a new version, the view pointed at it, the other versions dropped
    (module docstring). Returns the new version's name."""
    before = ensure(session, table)
    new = version_name(table, _number(before) + 1)
    typed = frame.selectExpr(*(f"CAST({c} AS {t}) AS {c}" for c, t in TABLES[table].items()))
    typed.write.format("parquet").mode("error").saveAsTable(new)
    point(session, table, new)
    drop_old(session, table, keep=new)
    return new


def drop_old(session: Any, table: str, keep: str) -> None:
    """Drop every version of ``table`` but ``keep``; a failure leaves them for the
    next write (the commit is done)."""
    with suppress(Exception):
        for name in versions(session, table):
            if name != keep:
                session.sql(f"DROP TABLE IF EXISTS {name}").collect()


def drop(session: Any, table: str) -> None:
    """Remove ``table``: its view (or an earlier abeval's plain table) and every version."""
    if session.catalog.tableExists(table):
        kind = session.catalog.getTable(table).tableType
        session.sql(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {table}").collect()
    for name in versions(session, table):
        session.sql(f"DROP TABLE IF EXISTS {name}").collect()


def read_rows(conn: Connection, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as {column: value} (empty when it does not exist)."""
    from sqlalchemy import text

    if not conn.has_table(table):  # type: ignore[attr-defined]
        return []
    columns = list(TABLES[table])
    rows = conn.execute(text(f"SELECT {', '.join(columns)} FROM {table}")).fetchall()
    return [dict(zip(columns, r, strict=True)) for r in rows]


def write_all(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Make ``rows`` the whole content of ``table`` (uploaded as Arrow, written by
    Spark as a new version)."""
    session = _session(conn)
    columns = list(TABLES[table])
    values = [tuple(row.get(c) for c in columns) for row in rows]
    publish(session, table, session.createDataFrame(values, schema=schema(table)))


def write_query(conn: Connection, table: str, sql: str, params: Mapping[str, Any]) -> None:
    """Make the rows of ``sql`` (abeval's portable SQL, which may read ``table``
    itself) the whole content of ``table``: for contents too large to pass
    through Python, such as recorded target probabilities."""
    from abeval.store.backends.spark.dialect import to_spark

    session = _session(conn)
    ensure(session, table)
    publish(session, table, session.sql(to_spark(sql), args=dict(params) or None))


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


def _session(conn: Connection) -> Any:
    return conn.session  # type: ignore[attr-defined]


@contextmanager
def writing(store: Database) -> Iterator[Connection]:
    """A connection to write abeval's own tables of a Spark store, under the
    store's writer lock."""
    from abeval.store.backends.spark.database import SparkDatabase

    assert isinstance(store, SparkDatabase)
    with store.own_tables() as conn:
        yield conn
