"""Spark Connect (:mod:`abeval.store.backends.spark`): no migration and no transaction;
abeval's own tables are Parquet tables written whole and swapped in by one
pointer (:mod:`abeval.store.backends.spark.own_tables`), under the store's writer lock;
rows from Python are uploaded as Arrow; temporary tables are cached views, which
take no ``UPDATE``; ingest lands the checked rows on the cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.backends.base import Backend, cannot_read
from abeval.store.backends.duckdb.backend import arrow_table
from abeval.store.backends.spark.types import SPARK_TYPES
from abeval.store.schema import Column

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.choices import OnError
    from abeval.store.backends.spark.database import SparkDatabase
    from abeval.store.database import Database
    from abeval.store.ingest.record import Job
    from abeval.store.ingest.summary import IngestSummary
    from abeval.store.source_sql import Relation


class SparkBackend(Backend):
    temporary_tables = True
    runs_migrations = False
    type_names = SPARK_TYPES

    def __init__(self) -> None:
        super().__init__("spark")

    def owns_url(self, url: str) -> bool:
        """Spark Connect's ``sc://HOST:PORT`` (and a Spark master's ``spark://``,
        refused with the fix when opened)."""
        return url.startswith(("sc://", "spark://"))

    def open(
        self,
        url: str,
        read_only: bool,
        *,
        create: bool = True,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> SparkDatabase:
        """A Spark Connect session (:mod:`abeval.store.backends.spark.database`): no
        SQLAlchemy engine, and the lock it waits for is the store's writer lock."""
        from abeval.store.backends.connecting import env_lock_timeout
        from abeval.store.backends.spark.database import open_spark_store

        timeout = lock_timeout if lock_timeout is not None else env_lock_timeout()
        return open_spark_store(
            url, self, read_only=read_only, lock_timeout=timeout, on_lock_wait=on_lock_wait
        )

    def utc_timestamp(self, column: str) -> str:
        # An instant as the session's wall clock, and the session's zone is UTC
        # (abeval.store.backends.spark.database.SESSION_CONF): the UTC time, zone-less.
        return f"CAST({column} AS TIMESTAMP)"

    def describe(self, conn: Connection, rel: Relation) -> dict[str, str]:
        """The columns Spark's analyser gives the table (nothing is run), their
        types upper case as DuckDB shows its own (``STRING``, ``BIGINT``,
        ``TIMESTAMP_NTZ``)."""
        from abeval.store.backends.spark.database import spark_reason

        try:
            columns = conn.columns(f"SELECT * FROM {rel.sql}")  # type: ignore[attr-defined]
            return {str(n): str(t).upper() for n, t in columns}
        except Exception as exc:
            reason = spark_reason(exc)
            if "TABLE_OR_VIEW_NOT_FOUND" in reason:
                raise InputError(
                    f"no table or view {rel.shown} in the Spark catalog ({{table}}); name it "
                    "as DATABASE.TABLE, as SHOW TABLES IN DATABASE lists it",
                    parameters=("table",),
                ) from None
            raise cannot_read(rel, reason) from None

    def materialize(
        self, conn: Connection, table: str, query: str, params: Mapping[str, Any]
    ) -> None:
        """One statement: the checkpointed view replaces any view of that name
        (``createOrReplaceTempView``), so nothing is dropped before."""
        from sqlalchemy import text

        conn.execute(text(f"CREATE TEMP TABLE {table} AS {query}"), dict(params))

    def drop_temporary(self, conn: Connection, table: str) -> None:
        """Nothing sent: a view of the session is replaced by the next one of its
        name and goes with the session (:meth:`SparkDatabase.close`); a ``DROP`` is a
        statement of its own, with Spark's fixed cost (docs/design/spark.md §12)."""

    def load_rows(
        self,
        conn: Connection,
        table: str,
        columns: Sequence[Column],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """A temporary view of the uploaded rows."""
        conn.register_arrow(table, arrow_table(columns, rows))  # type: ignore[attr-defined]

    def fill_nulls(
        self,
        conn: Connection,
        table: str,
        column: str,
        value: str,
        columns: Sequence[str],
        params: Mapping[str, Any],
    ) -> None:
        """A Spark temporary view takes no UPDATE: the filled rows are built, then
        swapped in."""
        from sqlalchemy import text

        filled = f"{table}_filled"
        select = ", ".join(f"COALESCE({c}, {value}) AS {c}" if c == column else c for c in columns)
        conn.execute(
            text(f"CREATE TEMP TABLE {filled} AS SELECT {select} FROM {table}"), dict(params)
        )
        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(text(f"CREATE TEMP TABLE {table} AS SELECT * FROM {filled}"))
        conn.execute(text(f"DROP TABLE IF EXISTS {filled}"))

    def has_own_table(self, conn: Connection, table: str) -> bool:
        """The first write that needs one creates it."""
        return bool(conn.has_table(table))  # type: ignore[attr-defined]

    @contextmanager
    def writing(self, store: Database) -> Iterator[Connection]:
        """No transaction: the connection for abeval's own tables, under the
        store's writer lock; each table's new content is committed by one pointer
        swap."""
        from abeval.store.backends.spark import own_tables

        with own_tables.writing(store) as conn:
            yield conn

    def change_experiment_row(
        self, conn: Connection, experiment: str, values: Mapping[str, Any]
    ) -> None:
        """``experiments`` takes no UPDATE: it is written again as a new version with
        the row changed, and the table pointed at it (docs/design/spark.md §11)."""
        from abeval.store.backends.spark.experiments_table import change_settings

        change_settings(conn.session, experiment, values)  # type: ignore[attr-defined]

    def replace_rows(
        self,
        conn: Connection,
        table: str,
        key: str,
        values: Sequence[Any],
        rows: Sequence[Mapping[str, Any]],
    ) -> None:
        """A Parquet table takes no DELETE: its other rows and ``rows`` are written
        back together (docs/design/spark.md §10)."""
        from abeval.store.backends.spark import own_tables

        gone = set(values)
        own_tables.replace_rows(conn, table, lambda r: r[key] not in gone, rows)

    def replace_by_query(
        self,
        conn: Connection,
        table: str,
        key: str,
        columns: Sequence[str],
        query: str,
        params: Mapping[str, Any],
    ) -> None:
        from abeval.store.backends.spark import own_tables

        others = f"SELECT {', '.join(columns)} FROM {table} WHERE {key} <> :{key}"
        own_tables.write_query(conn, table, f"{others} UNION ALL {query}", params)

    def load_file(self, store: Database, job: Job, on_error: OnError) -> IngestSummary:
        """Checked here, landed on the cluster (:mod:`abeval.store.backends.spark.ingest`)."""
        from abeval.store.backends.spark.ingest import load_spark

        return load_spark(store, job, on_error)  # type: ignore[arg-type]
