"""DuckDB: the default store. Files read in place, ingest staged in the store's
own connection (and loaded directly when it can be), memory capped for the
statements that need most of it, rows from Python registered as Arrow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.backends.base import Backend, cannot_read, driver_reason
from abeval.store.schema import Column

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from abeval.choices import OnError
    from abeval.store.backends.duckdb.memory import DuckDBMemory
    from abeval.store.database import Database
    from abeval.store.ingest.record import Job
    from abeval.store.ingest.summary import IngestSummary
    from abeval.store.source_sql import Relation

#: The view under which rows from Python are registered while they are copied.
_ARROW_VIEW = "abeval_ope_rows"


def _file_of(url: str) -> str | None:
    """The DuckDB file ``url`` names; None for an in-memory database."""
    from sqlalchemy.engine import make_url

    path = make_url(url).database
    return None if not path or str(path).startswith(":memory:") else str(path)


class DuckDBBackend(Backend):
    temporary_tables = True
    reads_files_in_place = True
    stages_in_store = True
    caps_memory = True

    def __init__(self) -> None:
        super().__init__("duckdb")

    def owns_url(self, url: str) -> bool:
        return url.startswith("duckdb")

    def display_url(self, url: str) -> str:
        """A DuckDB store is shown as its file's path."""
        from abeval.store.backends.duckdb.files import shown_path

        shown = shown_path(url)
        return shown if shown is not None else super().display_url(url)

    def prepare(self, url: str, shown: str, must_exist: bool) -> DuckDBMemory | None:
        """The file checked (:func:`~abeval.store.backends.duckdb.files.check_duckdb_file`),
        and the memory limit and spill folder of its connection."""
        from abeval.store.backends.duckdb.files import check_duckdb_file
        from abeval.store.backends.duckdb.memory import duckdb_memory

        check_duckdb_file(url, shown, must_exist)
        return duckdb_memory(_file_of(url))

    def create_engine(self, url: str, read_only: bool, memory: DuckDBMemory | None) -> Engine:
        """One connection per process: DuckDB serialises writers anyway, and a single
        connection lets ingest reuse it through ``driver_connection``."""
        from sqlalchemy import create_engine, event
        from sqlalchemy.pool import StaticPool

        from abeval.store.backends.duckdb.memory import MEMORY_LIMIT_INFO

        args: dict[str, Any] = {"read_only": read_only}
        if memory is not None:
            args["config"] = memory.config()
        engine = create_engine(url, poolclass=StaticPool, connect_args=args)

        @event.listens_for(engine, "connect")
        def _utc(dbapi_connection: Any, _record: Any) -> None:
            # Timestamps without a zone are UTC whatever the machine's zone is.
            dbapi_connection.execute("SET TimeZone = 'UTC'")
            # abeval reports its own progress; DuckDB's bar would garble stdout. In
            # Jupyter without ipywidgets it is off already, and setting it fails.
            bar = "SELECT current_setting('enable_progress_bar')"
            if dbapi_connection.execute(bar).fetchone()[0]:
                dbapi_connection.execute("SET enable_progress_bar = false")
            if memory is not None:  # for a statement that lowers it to put it back
                _record.info[MEMORY_LIMIT_INFO] = memory.limit_bytes

        return engine

    def file_locked(self, url: str) -> bool:
        """A DuckDB file is; an in-memory database is not."""
        return _file_of(url) is not None

    def is_locked(self, message: str) -> bool:
        return "Could not set lock" in message or "Conflicting lock" in message

    def shared_elsewhere(self, engine: Engine) -> bool:
        from abeval.store.backends.duckdb.memory import shared_elsewhere

        return shared_elsewhere(engine)

    def is_held_here(self, message: str) -> bool:
        return "different configuration than existing connections" in message

    def temporary_name(self, view: str) -> str:
        return f"temp.main.{view}"

    def utc_timestamp(self, column: str) -> str:
        # The UTC instant from its microseconds: DuckDB's AT TIME ZONE goes
        # through ICU and costs a third of a pass over the table.
        return f"make_timestamp(epoch_us({column}))"

    def json_key(self, name: str) -> str:
        """DuckDB reads a text beginning with ``$`` as a JSONPath and one beginning
        with ``/`` as a JSON Pointer (RFC 6901), so those names go as the pointer to
        themselves (``~`` written ``~0``, ``/`` written ``~1``)."""
        if name[:1] in ("$", "/"):
            return "/" + name.translate({ord("~"): "~0", ord("/"): "~1"})
        return name

    def json_keys_sql(self, objects: str) -> str | None:
        return f"SELECT DISTINCT unnest(json_keys(CAST(a AS JSON))) FROM {objects}"

    def describe(self, conn: Connection, rel: Relation) -> dict[str, str]:
        from sqlalchemy import text

        try:
            rows = conn.execute(text(f"DESCRIBE SELECT * FROM {rel.sql}")).fetchall()
        except Exception as exc:
            raise _unreadable(rel, exc) from None
        return {str(r[0]): str(r[1]) for r in rows}

    def load_rows(
        self,
        conn: Connection,
        table: str,
        columns: Sequence[Column],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        duck = conn.connection.driver_connection
        assert duck is not None
        duck.register(_ARROW_VIEW, arrow_table(columns, rows))
        try:
            duck.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {_ARROW_VIEW}")
        finally:
            duck.unregister(_ARROW_VIEW)

    def load_file(self, store: Database, job: Job, on_error: OnError) -> IngestSummary:
        """The direct load where it applies and succeeds, else the staged load."""
        from abeval.store.backends.duckdb.direct import load_direct

        direct = load_direct(store, job)
        if direct is not None:
            return direct
        return super().load_file(store, job, on_error)


def arrow_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> Any:
    """``rows`` as a pyarrow Table of ``columns``."""
    import pyarrow as pa

    types = {"text": pa.string(), "integer": pa.int32(), "bigint": pa.int64()}
    types |= {"double": pa.float64(), "timestamp": pa.timestamp("us")}
    return pa.table(
        [pa.array([r[i] for r in rows], type=types[c.kind]) for i, c in enumerate(columns)],
        names=[c.name for c in columns],
    )


def _unreadable(rel: Relation, exc: Exception) -> InputError:
    """One line for a table DuckDB cannot find or files it cannot read."""

    reason = driver_reason(exc)
    if "No files found" in reason:
        return InputError(
            f"no file matches {{table}} {rel.shown}; check the path (a glob such as "
            "data/*.parquet works)",
            parameters=("table",),
        )
    if "Catalog Error" in str(getattr(exc, "orig", exc)):
        return InputError(
            f"no table or view {rel.shown} in the store's database ({{table}}); name it as "
            "SCHEMA.TABLE, or name Parquet/CSV files by their path",
            parameters=("table",),
        )
    return cannot_read(rel, reason)
