"""abeval's tables on Spark: the Spark SQL that creates them, and where they live.

``migrations/`` is the schema on DuckDB and PostgreSQL; no migration runs on
Spark, so this module writes the DDL of the tables a Spark store keeps
(``events``, ``ingests``, ``experiments``, ``rejected_rows``) from abeval's one
description of its
tables (:mod:`abeval.store.schema`, which a test checks against a migrated store),
in Spark SQL (docs/design/spark.md#9-ingest-into-spark).

- Parquet tables, created with an explicit ``LOCATION`` (external: dropping one
  never deletes data), under ``ABEVAL_SPARK_WAREHOUSE`` when it is set, else the
  current database's own folder (``spark.sql.warehouse.dir`` for ``default``).
- ``events``, ``ingests`` and ``rejected_rows`` are partitioned by ``ingest_id``:
  one ingest is one partition, added by one metastore operation (for ``events``,
  the ingest's commit; the others in its bookkeeping).
- ``experiments`` is small and rewritten whole: each version is a managed table
  ``experiments__v<N>_<token>`` whose folder the table is pointed at (``SET
  LOCATION``); old versions are dropped (:mod:`abeval.store.backends.spark.experiments_table`).
- ``ts`` and the other times are ``TIMESTAMP_NTZ``: zone-less, as DuckDB's
  ``TIMESTAMP``. The ``NOT NULL`` constraints of the migrations are not declared
  (Parquet tables do not enforce them); the ingest checks every row before it
  lands (:mod:`abeval.store.ingest`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from abeval.errors import StoreError
from abeval.store.backends.spark.dialect import spark_native
from abeval.store.backends.spark.types import SPARK_TYPES
from abeval.store.schema import TABLES

#: Where abeval creates its tables on Spark (a URI the cluster can write:
#: ``s3a://bucket/abeval``, ``hdfs:///abeval``, a local folder for one machine).
WAREHOUSE_ENV = "ABEVAL_SPARK_WAREHOUSE"

#: The tables partitioned by ingest (one partition per ingest).
PARTITIONED = ("events", "ingests", "rejected_rows")
PARTITION = "ingest_id"


def _spark_columns(table: str) -> tuple[tuple[str, str], ...]:
    """The columns of ``table`` (:data:`abeval.store.schema.TABLES`) with Spark's
    types; the partition column last (Spark keeps partition columns at the end)."""
    columns = [(c.name, SPARK_TYPES[c.kind]) for c in TABLES[table].columns]
    if table in PARTITIONED:
        columns.sort(key=lambda c: c[0] == PARTITION)
    return tuple(columns)


#: Column and Spark type of each table: the migrations' order, the partition
#: column last.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    t: _spark_columns(t) for t in ("ingests", "events", "experiments", "rejected_rows")
}
#: The server's catalog: ``hive`` (a metastore) keeps tables; ``in-memory`` does not.
CATALOG_CONF = "spark.sql.catalogImplementation"
#: The folder of the first, empty version of ``experiments``.
FIRST_VERSION = "v0"


def create_table_sql(table: str, location: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``table`` at ``location`` (Spark SQL)."""
    cols = ", ".join(f"{name} {kind}" for name, kind in COLUMNS[table])
    parts = f" PARTITIONED BY ({PARTITION})" if table in PARTITIONED else ""
    where = location + (f"/{FIRST_VERSION}" if table == "experiments" else "")
    return spark_native(
        f"CREATE TABLE IF NOT EXISTS {table} ({cols}) USING PARQUET{parts} "
        f"LOCATION {spark_string(where)}"
    )


def add_partition_sql(
    table: str, ingest_id: int, location: str, *, if_missing: bool = False
) -> str:
    """The commit of one ingest into ``table``: its partition, at ``location``
    (``if_missing``: nothing when the table has it already)."""
    exists = " IF NOT EXISTS" if if_missing else ""
    return spark_native(
        f"ALTER TABLE {table} ADD{exists} PARTITION({PARTITION} = {int(ingest_id)}) "
        f"LOCATION {spark_string(location)}"
    )


def set_location_sql(table: str, location: str) -> str:
    """Point ``table`` at a new folder (a new version of a table rewritten whole)."""
    return spark_native(f"ALTER TABLE {table} SET LOCATION {spark_string(location)}")


def data_columns(table: str) -> tuple[str, ...]:
    """The columns of ``table`` that its Parquet files hold (not the partition)."""
    parts = table in PARTITIONED
    return tuple(name for name, _ in COLUMNS[table] if not (parts and name == PARTITION))


def spark_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslashes and quotes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Layout:
    """Where the tables' files are: the folder of each table (``experiments``: the
    folder its versions are made in)."""

    events: str
    ingests: str
    experiments: str
    rejected_rows: str

    def partition(self, table: str, ingest_id: int) -> str:
        return f"{getattr(self, table)}/{PARTITION}={int(ingest_id)}"

    @property
    def staging(self) -> str:
        """Rows uploaded before they are compared with the store; ``_`` hides the
        folder from the table's listing (and from ``MSCK REPAIR TABLE``)."""
        return f"{self.events}/_staging"


def ensure_tables(session: Any, present: set[str], shown: str) -> Layout:
    """Create the tables abeval needs that ``present`` lacks; check that the
    catalog keeps them and that the partitioned ones are partitioned by ingest;
    return where they all live."""
    if session.conf.get(CATALOG_CONF, "in-memory") == "in-memory":
        raise StoreError(
            f"the Spark Connect server of {shown} keeps its catalog in memory, so tables "
            "loaded now would vanish when it restarts; start it with --conf "
            f"{CATALOG_CONF}=hive (or a metastore) before abeval ingest"
        )
    missing = [t for t in COLUMNS if t not in present]
    if missing:
        root = (os.environ.get(WAREHOUSE_ENV) or database_folder(session)).rstrip("/")
        for table in missing:
            _must_be_new(session, f"{root}/{table}")
        for table in missing:
            session.sql(create_table_sql(table, f"{root}/{table}")).collect()
    for table in PARTITIONED:
        if table in present:
            _add_new_columns(session, table)
    where = {t: _described(session, t) for t in COLUMNS}
    for table in PARTITIONED:
        parts = where[table][1]
        if parts != [PARTITION]:
            raise StoreError(
                f"the Spark table {table} is not partitioned by {PARTITION} (it was not "
                "created by abeval ingest), so abeval cannot add files to it; load into "
                f"another database, or drop it and let abeval create it ({WAREHOUSE_ENV})"
            )
    experiments = where["experiments"][0]
    return Layout(
        events=where["events"][0],
        ingests=where["ingests"][0],
        experiments=experiments.rsplit("/", 1)[0],
        rejected_rows=where["rejected_rows"][0],
    )


def _must_be_new(session: Any, folder: str) -> None:
    """Refuse to create a table in a folder that holds Parquet files already (the
    tables of an earlier store, dropped from the catalog): its ingests would write
    over their partitions."""
    try:
        session.read.parquet(folder).schema  # noqa: B018 (lists the folder)
    except Exception as exc:
        if "PATH_NOT_FOUND" in str(exc) or "UNABLE_TO_INFER_SCHEMA" in str(exc):
            return
        raise
    raise StoreError(
        f"the folder {folder} holds the files of an earlier table; abeval creates its "
        f"tables in new folders: set {WAREHOUSE_ENV} to another folder, or register the "
        "old tables in the catalog again"
    )


def database_folder(session: Any) -> str:
    """The folder of the session's current database."""
    name = session.catalog.currentDatabase()
    return str(session.catalog.getDatabase(name).locationUri)


def _add_new_columns(session: Any, table: str) -> None:
    """A table created before a column joined its schema (``events`` before
    ``propensity_given_above``, migration 0005 elsewhere) gets that column:
    Spark runs no migrations, and files written without it read it as NULL."""
    rows = session.sql(f"DESCRIBE TABLE {table}").collect()
    have = set()
    for row in rows:
        name = (row[0] or "").strip()
        if not name or name.startswith("#"):
            break
        have.add(name)
    new = [(c, t) for c, t in COLUMNS[table] if c not in have and c != PARTITION]
    if table == "events" and KEY_COLUMNS & {c for c, _ in new}:
        _refuse_unnumbered(session, table)
    if new:
        added = ", ".join(f"{c} {t}" for c, t in new)
        session.sql(f"ALTER TABLE {table} ADD COLUMNS ({added})").collect()


#: The integer keys (migration 0010 elsewhere): rows stored before them would
#: read them as NULL, and the replay skips rows without keys.
KEY_COLUMNS = frozenset({"request_no", "item_no"})


def _refuse_unnumbered(session: Any, table: str) -> None:
    """Refuse to add the integer keys to an ``events`` table that holds rows:
    those rows would keep NULL keys and drop out of the replay without a word."""
    if session.sql(f"SELECT 1 FROM {table} LIMIT 1").collect():
        raise StoreError(
            f"the Spark table {table} was written by an abeval without integer keys "
            "(request_no, item_no) and its rows cannot be numbered in place: ingest its "
            f"files again into a new store ({WAREHOUSE_ENV} set to a new folder and "
            "another database)"
        )


def _described(session: Any, table: str) -> tuple[str, list[str]]:
    """The table's location and partition columns, from ``DESCRIBE TABLE EXTENDED``."""
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    location, parts, in_parts = "", [], False
    for row in rows:
        name = (row[0] or "").strip()
        if name == "# Partition Information":
            in_parts = True
        elif name.startswith("#") or not name:
            in_parts = in_parts and name.startswith("# col_name")
        elif in_parts:
            parts.append(name)
        if name == "Location":
            location = str(row[1]).strip()
    return location, parts
