"""The portable backend: what abeval does on an engine it has no backend for, and
the default of each engine's backend (:mod:`abeval.store.backends`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError, StoreError
from abeval.store.backends.faults import store_fault
from abeval.store.backends.url_secrets import masked_url
from abeval.store.schema import PORTABLE_TYPES, Column

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from abeval.choices import OnError
    from abeval.store.backends.duckdb.memory import DuckDBMemory
    from abeval.store.database import Database
    from abeval.store.ingest.record import Job
    from abeval.store.ingest.summary import IngestSummary
    from abeval.store.source_sql import Relation


class Backend:
    """What one engine does its own way. The base is plain SQL that any engine
    with SQLAlchemy runs; each engine's subclass overrides what it does otherwise."""

    #: Temporary tables hold the CTEs shared between a report's queries
    #: (:meth:`materialize`); without them the CTEs are computed again.
    temporary_tables = False
    #: ``--table`` may name Parquet or CSV files, read in place.
    reads_files_in_place = False
    #: Ingest stages a file in the store's own DuckDB connection (else in an
    #: in-memory DuckDB, its good rows then sent to the store).
    stages_in_store = False
    #: The migrations make abeval's tables (else the first write that needs one does).
    runs_migrations = True
    #: Memory-hungry statements run under a lower memory limit
    #: (:func:`abeval.store.memory.memory_capped`).
    caps_memory = False
    #: The SQL type of each kind of column (:data:`abeval.store.schema.PORTABLE_TYPES`).
    type_names: Mapping[str, str] = PORTABLE_TYPES

    def __init__(self, name: str = "sql") -> None:
        #: SQLAlchemy's name of the engine's dialect.
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- opening -----------------------------------------------------------

    def owns_url(self, url: str) -> bool:
        """Whether ``url`` (a SQLAlchemy URL, or Spark Connect's) is this engine's
        (:func:`abeval.store.backends.backend_for_url`)."""
        return False

    def display_url(self, url: str) -> str:
        """The URL as it may be shown to a user: its password and secret parameters
        masked (:mod:`abeval.store.backends.url_secrets`)."""
        return masked_url(url)

    def open(
        self,
        url: str,
        read_only: bool,
        *,
        create: bool = True,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> Database:
        """The database at ``url``, its engine connected once (migrations are
        :func:`abeval.store.open_store`'s). A store another process holds is waited
        for ``lock_timeout`` seconds (``ABEVAL_LOCK_TIMEOUT``), ``on_lock_wait`` told
        once; ``create=False``: a store that does not exist is refused."""
        from abeval.store.backends.connecting import (
            check_password,
            connect_engine,
            env_lock_timeout,
        )
        from abeval.store.database import Database

        shown = self.display_url(url)
        check_password(url, shown)
        memory = self.prepare(url, shown, must_exist=read_only or not create)
        timeout = lock_timeout if lock_timeout is not None else env_lock_timeout()
        engine = connect_engine(self, url, shown, read_only, memory, timeout, on_lock_wait)
        return Database(engine=engine, url=url, read_only=read_only, backend=self, memory=memory)

    def prepare(self, url: str, shown: str, must_exist: bool) -> DuckDBMemory | None:
        """Checks before the engine is made, and the memory settings of its
        connections (DuckDB's); ``must_exist``: the store is not to be created."""
        return None

    def create_engine(self, url: str, read_only: bool, memory: DuckDBMemory | None) -> Engine:
        """SQLAlchemy's engine for ``url``."""
        from sqlalchemy import create_engine

        return create_engine(url, pool_pre_ping=True)

    def file_locked(self, url: str) -> bool:
        """Whether ``url`` names a file that one writing process or many reading ones
        may open at a time (a DuckDB file): :func:`abeval.open` then holds it
        read-only between calls and writable only for a write
        (:mod:`abeval.store.held`)."""
        return False

    def is_locked(self, message: str) -> bool:
        """Whether the driver's ``message`` on connecting says that another process
        holds the store (then abeval waits for it)."""
        return False

    def shared_elsewhere(self, engine: Engine) -> bool:
        """Whether another connection of this process uses the database ``engine``
        is connected to (DuckDB's of a file two stores opened): its spill folder is
        then kept when ``engine`` closes."""
        return False

    def is_held_here(self, message: str) -> bool:
        """Whether the driver's ``message`` on connecting says that this process
        holds the store already with other settings (DuckDB: open for reading while
        this connection would write): waiting would wait for itself."""
        return False

    def fault(self, shown: str, url: str, exc: Exception) -> BaseException | None:
        """What to raise instead of ``exc``, escaped from a block of the store
        ``shown``: one :class:`StoreError` line for a fault of the store, its disk or
        its server, a ``KeyboardInterrupt`` for DuckDB's interrupt (every engine
        stages its ingest in DuckDB); None for any other error, which goes on
        (:mod:`abeval.store.backends.faults`)."""
        return store_fault(shown, url, exc)

    # -- SQL spellings ------------------------------------------------------

    def temporary_name(self, view: str) -> str:
        """The qualified name of the temporary view ``view``: never the store's
        table of the same name."""
        return view

    def json_object(self, pairs: str) -> str:
        """A JSON object from ``pairs`` (``'key', value, ...``)."""
        return f"json_object({pairs})"

    def utc_timestamp(self, column: str) -> str:
        """A timestamp with a zone as the zone-less UTC time."""
        return f"({column} AT TIME ZONE 'UTC')"

    def json_key(self, name: str) -> str:
        """The text that ``CAST(x AS JSON) ->> text`` reads as the attribute
        ``name``, exactly: PostgreSQL (and Spark's rewrite) take any text as a name."""
        return name

    def json_keys_sql(self, objects: str) -> str | None:
        """A query of the distinct keys of the JSON texts in column ``a`` of the
        relation ``objects``; None when the engine has no such function (the
        caller then reads the objects in Python)."""
        return None

    def columns_sql(self, columns: Sequence[Column]) -> str:
        """``name TYPE, ...``: the columns as a table's DDL lists them."""
        return ", ".join(f"{c.name} {self.type_names[c.kind]}" for c in columns)

    # -- tables ------------------------------------------------------------

    def describe(self, conn: Connection, rel: Relation) -> dict[str, str]:
        """The relation's columns and their SQL types, in order; one line when it
        does not exist."""
        raise StoreError(
            f"reading a table in place is not supported on {self.name} yet; "
            "use a DuckDB, PostgreSQL or Spark store"
        )

    def create_temporary(self, conn: Connection, table: str, columns: Sequence[Column]) -> None:
        """The empty temporary table ``table`` of ``columns``."""
        from sqlalchemy import text

        conn.execute(text(f"CREATE TEMP TABLE {table} ({self.columns_sql(columns)})"))

    def analyze_temporary(self, conn: Connection, table: str) -> None:
        """Whatever the planner needs after a temporary table is filled."""

    def wait_briefly(self, conn: Connection) -> None:
        """Inside a transaction that may give up (a shortcut such as a kept summary):
        wait at most a moment for another writer's lock. DuckDB takes a file lock
        when it opens, so there is nothing to wait for inside a transaction."""

    def materialize(
        self, conn: Connection, table: str, query: str, params: Mapping[str, Any]
    ) -> None:
        """The rows of ``query`` computed once as the temporary table ``table``
        (replacing one of that name), ready for the planner
        (:func:`abeval.store.shared_ctes.materialize`; Spark caches it as a view,
        :mod:`abeval.store.backends.spark.dialect`)."""
        from sqlalchemy import text

        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(text(f"CREATE TEMP TABLE {table} AS {query}"), dict(params))
        self.analyze_temporary(conn, table)

    def drop_temporary(self, conn: Connection, table: str) -> None:
        """The temporary table ``table`` dropped, if there is one."""
        from sqlalchemy import text

        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))

    def load_rows(
        self,
        conn: Connection,
        table: str,
        columns: Sequence[Column],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """Rows from Python as the new temporary table ``table``."""
        from sqlalchemy import text

        self.create_temporary(conn, table, columns)
        if rows:
            names = [c.name for c in columns]
            conn.execute(
                text(f"INSERT INTO {table} VALUES ({', '.join(':' + n for n in names)})"),
                [dict(zip(names, r, strict=True)) for r in rows],
            )

    def fill_nulls(
        self,
        conn: Connection,
        table: str,
        column: str,
        value: str,
        columns: Sequence[str],
        params: Mapping[str, Any],
    ) -> None:
        """The NULLs of ``column`` in the temporary table ``table`` (of ``columns``)
        replaced by the SQL ``value``."""
        from sqlalchemy import text

        conn.execute(
            text(f"UPDATE {table} SET {column} = {value} WHERE {column} IS NULL"), dict(params)
        )

    # -- abeval's own tables -------------------------------------------------

    def has_own_table(self, conn: Connection, table: str) -> bool:
        """Whether the store has abeval's own table ``table`` (the migrations make
        them all)."""
        return True

    @contextmanager
    def writing(self, store: Database) -> Iterator[Connection]:
        """A connection to write abeval's own tables: one transaction."""
        with store.begin() as conn:
            yield conn

    def replace_rows(
        self,
        conn: Connection,
        table: str,
        key: str,
        values: Sequence[Any],
        rows: Sequence[Mapping[str, Any]],
    ) -> None:
        """The rows of ``table`` whose ``key`` is one of ``values`` replaced by
        ``rows`` (dicts of column → value, each row's ``key`` among ``values``)."""
        from sqlalchemy import text

        for value in values:
            conn.execute(text(f"DELETE FROM {table} WHERE {key} = :k"), {"k": value})
        if rows:
            columns = list(rows[0])
            conn.execute(
                text(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join(':' + c for c in columns)})"
                ),
                [dict(r) for r in rows],
            )

    def replace_by_query(
        self,
        conn: Connection,
        table: str,
        key: str,
        columns: Sequence[str],
        query: str,
        params: Mapping[str, Any],
    ) -> None:
        """The rows of ``table`` whose ``key`` is ``params[key]`` replaced by the
        rows of ``query`` (its columns ``columns``): rows too many to pass through
        Python."""
        from sqlalchemy import text

        conn.execute(text(f"DELETE FROM {table} WHERE {key} = :{key}"), dict(params))
        conn.execute(text(f"INSERT INTO {table} ({', '.join(columns)}) {query}"), dict(params))

    def change_experiment_row(
        self, conn: Connection, experiment: str, values: Mapping[str, Any]
    ) -> None:
        """Set the columns of ``values`` (``None``: cleared) in the experiment's row
        of ``experiments``."""
        from sqlalchemy import text

        names = sorted(values)
        assignments = ", ".join(f"{c} = :v{i}" for i, c in enumerate(names))
        params = {f"v{i}": values[c] for i, c in enumerate(names)}
        conn.execute(
            text(f"UPDATE experiments SET {assignments} WHERE experiment = :e"),
            {**params, "e": experiment},
        )

    def write_own_rows(
        self, store: Database, table: str, key: str, values: Sequence[Any], rows: Sequence[Any]
    ) -> None:
        """:meth:`replace_rows` on a connection of :meth:`writing`: all or nothing."""
        with self.writing(store) as conn:
            self.replace_rows(conn, table, key, values, rows)

    # -- loading events ---------------------------------------------------------

    def load_file(self, store: Database, job: Job, on_error: OnError) -> IngestSummary:
        """Load one event file (:mod:`abeval.store.ingest`): staged in an
        in-memory DuckDB, its good rows sent to the store."""
        from abeval.store.ingest.staged import load_staged

        return load_staged(store, job, on_error)

    def insert_staged(
        self, conn: Connection, duck: Any, fresh: str, ingest_id: int, file: str
    ) -> int:
        """Insert the rows of ``fresh`` (a query of the local DuckDB ``duck``) into
        the store's ``events`` as ingest ``ingest_id`` of ``file``: the bulk path
        of the staged load to a store that is not that DuckDB. Returns how many
        were new."""
        raise StoreError(
            f"loading events into a {self.name} store is not supported; "
            "use a DuckDB, PostgreSQL or Spark store"
        )


def cannot_read(rel: Relation, reason: str) -> InputError:
    """One line for a ``--table`` the engine cannot read."""
    return InputError(f"cannot read {{table}} {rel.shown}: {reason}", parameters=("table",))


def driver_reason(exc: Exception) -> str:
    """The driver's first line without its class prefix (``Catalog Error: ``)."""
    orig = getattr(exc, "orig", None) or exc
    line = (str(orig).strip().splitlines() or ["unknown error"])[0]
    return line.split(": ", 1)[1] if line.split(": ", 1)[0].endswith("Error") else line
