"""Spark Connect (:mod:`abeval.store.spark`): no migration and no transaction;
abeval's own tables are Parquet tables written whole and swapped in by one
pointer (:mod:`abeval.store.spark.own_tables`), under the store's writer lock;
rows from Python are uploaded as Arrow; temporary tables are cached views, which
take no ``UPDATE``; ingest lands the checked rows on the cluster."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.backends.base import Backend
from abeval.store.backends.duck import arrow_table
from abeval.store.schema import Column

#: Spark's names of abeval's kinds of column (:data:`abeval.store.schema.PORTABLE_TYPES`).
SPARK_TYPES = {
    "text": "STRING",
    "integer": "INT",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "timestamp": "TIMESTAMP_NTZ",  # zone-less, as DuckDB's TIMESTAMP
}

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.choices import OnError
    from abeval.store.engine import Store
    from abeval.store.ingest.record import Job
    from abeval.store.ingest.summary import IngestSummary
    from abeval.store.source_sql import Relation


class SparkBackend(Backend):
    temporary_tables = True
    runs_migrations = False
    type_names = SPARK_TYPES

    def __init__(self) -> None:
        super().__init__("spark")

    def utc_timestamp(self, column: str) -> str:
        # An instant as the session's wall clock, and the session's zone is UTC
        # (abeval.store.spark.store.SESSION_CONF): the UTC time, zone-less.
        return f"CAST({column} AS TIMESTAMP)"

    def describe(self, conn: Connection, rel: Relation) -> dict[str, str]:
        """The columns Spark's analyser gives the table (nothing is run), their
        types upper case as DuckDB shows its own (``STRING``, ``BIGINT``,
        ``TIMESTAMP_NTZ``)."""
        from abeval.store.source_sql import cannot_read
        from abeval.store.spark.store import spark_reason

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
        name and goes with the session (:meth:`SparkStore.close`); a ``DROP`` is a
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
    def writing(self, store: Store) -> Iterator[Connection]:
        """No transaction: the connection for abeval's own tables, under the
        store's writer lock; each table's new content is committed by one pointer
        swap."""
        from abeval.store.spark import own_tables

        with own_tables.writing(store) as conn:
            yield conn

    def change_experiment_row(
        self, conn: Connection, experiment: str, values: Mapping[str, Any]
    ) -> None:
        """``experiments`` takes no UPDATE: it is written again as a new version with
        the row changed, and the table pointed at it (docs/design/spark.md §11)."""
        from abeval.store.spark.experiments_table import change_settings

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
        from abeval.store.spark import own_tables

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
        from abeval.store.spark import own_tables

        others = f"SELECT {', '.join(columns)} FROM {table} WHERE {key} <> :{key}"
        own_tables.write_query(conn, table, f"{others} UNION ALL {query}", params)

    def load_file(self, store: Store, job: Job, on_error: OnError) -> IngestSummary:
        """Checked here, landed on the cluster (:mod:`abeval.store.spark.ingest`)."""
        from abeval.store.spark.ingest import load_spark

        return load_spark(store, job, on_error)  # type: ignore[arg-type]
