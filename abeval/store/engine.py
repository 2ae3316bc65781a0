"""Open the store: resolve ``--db`` / ``ABEVAL_DB``, create the engine, apply migrations.

DuckDB's memory limit and spill folder come from ``ABEVAL_MEMORY_LIMIT`` and
``ABEVAL_TEMP_DIR`` (:mod:`abeval.store.memory`). A DuckDB file admits one
writing process at a time. abeval waits for a lock
held by another process for up to ``ABEVAL_LOCK_TIMEOUT`` seconds (default 10),
then stops with a message that names the process holding it.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval import signals
from abeval.errors import StoreError, interruption
from abeval.files import is_data_file
from abeval.store.backends import Backend, backend_named, dialect_name
from abeval.store.memory import MEMORY_LIMIT_INFO, DuckDBMemory, duckdb_memory
from abeval.store.url_secrets import masked_url, split_credentials, without_secrets

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

DEFAULT_DB = "abeval.duckdb"


def resolve_url(db: str | None) -> str:
    """Turn ``--db`` (a path or a SQLAlchemy URL), else ``ABEVAL_DB``, else the
    default file into a SQLAlchemy URL."""
    value = db or os.environ.get("ABEVAL_DB") or DEFAULT_DB
    if "://" in value:
        return value
    return "duckdb:///" + str(Path(value).expanduser().resolve())


def display_url(url: str) -> str:
    """The URL as it may be shown to a user: its password and secret parameters
    masked (:mod:`abeval.store.url_secrets`), and a DuckDB URL shown as its file path."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        parsed = None
    if parsed is not None and parsed.drivername.startswith("duckdb"):
        return masked_url(parsed.database or ":memory:")
    return masked_url(url)


def _check_password(url: str, shown: str) -> None:
    """Refuse a password that a URL cannot hold as it is: SQLAlchemy would end it at
    the first ``@`` and try to reach a host named after the rest of it."""
    _, password, _ = split_credentials(url)
    bad = sorted({c for c in password or "" if c in "@/?#"})
    if bad:
        chars = " ".join(bad)
        codes = ", ".join(f"{c} as %{ord(c):02X}" for c in bad)
        raise StoreError(
            f"{{db}} {shown}: the password holds {chars}, which a URL cannot hold as it is; "
            f"percent-encode it ({codes})",
            parameters=("db",),
        )


@dataclass
class Store:
    """An open store: a SQLAlchemy engine plus what abeval knows about it.

    Use it as a context manager (``with open_store(db) as store:``) so that the
    engine is disposed of, and a DuckDB file unlocked, however the block ends."""

    engine: Engine
    url: str
    read_only: bool
    memory: DuckDBMemory | None = None  # DuckDB's memory limit and spill folder

    @property
    def dialect(self) -> str:
        """``duckdb``, ``postgresql``, ``hive`` ..."""
        return dialect_name(self.engine)

    @property
    def backend(self) -> Backend:
        """What this store's engine does its own way (:mod:`abeval.store.backends`)."""
        return backend_named(self.dialect)

    @property
    def display(self) -> str:
        return display_url(self.url)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A connection inside one transaction, committed on success. A signal
        during the commit or the closing of the connection is kept until the
        command has said what it committed (:mod:`abeval.signals`)."""
        signals.checkpoint()
        with self.faults():
            conn = self.engine.connect()
            try:
                transaction = conn.begin()
                yield conn
            except BaseException:
                with signals.held():
                    conn.close()  # rolls the transaction back
                raise
            with signals.held():
                try:
                    transaction.commit()
                finally:
                    conn.close()
                signals.committed()

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """A connection for a change of abeval's own records made as one whole: a
        transaction here; a Spark store, which has none, holds its writer lock and
        replaces each table by one pointer swap (the backend's ``writing``)."""
        with self.backend.writing(self) as conn:
            yield conn

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self.faults():
            conn = self.engine.connect()
            try:
                yield conn
            finally:
                with signals.held():
                    conn.close()

    @contextmanager
    def faults(self) -> Iterator[None]:
        """Turn a database error that escapes the block into one :class:`StoreError`
        line naming this store, and DuckDB's interrupt into ``KeyboardInterrupt``.

        Only faults of the store, its disk or its server are turned: other database
        errors go on unchanged, for the caller that expects them (a bad row makes
        ingest fall back to its staged load) or as the bug they are."""
        try:
            yield
        except Exception as exc:
            if is_interrupt(exc):
                raise interruption() from None
            if not _is_store_fault(exc):
                raise
            raise StoreError(_fault_message(self.display, self.url, exc)) from None

    def close(self) -> None:
        with signals.held():
            self.engine.dispose()
        if self.memory is not None:
            self.memory.remove_spill_dir()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _create_engine(url: str, read_only: bool, memory: DuckDBMemory | None = None) -> Engine:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    if url.startswith("duckdb"):
        # One connection per process: DuckDB serialises writers anyway, and a
        # single connection lets ingest reuse it through ``driver_connection``.
        from sqlalchemy import event

        args: dict[str, Any] = {"read_only": read_only}
        if memory is not None:
            args["config"] = memory.config()
        engine = create_engine(url, poolclass=StaticPool, connect_args=args)

        @event.listens_for(engine, "connect")
        def _utc(dbapi_connection: Any, _record: Any) -> None:
            # Timestamps without a zone are UTC whatever the machine's zone is.
            dbapi_connection.execute("SET TimeZone = 'UTC'")
            # abeval reports its own progress; DuckDB's bar would garble stdout.
            dbapi_connection.execute("SET enable_progress_bar = false")
            if memory is not None:  # for a statement that lowers it to put it back
                _record.info[MEMORY_LIMIT_INFO] = memory.limit_bytes

        return engine
    return create_engine(url, pool_pre_ping=True)


def _check_duckdb_file(url: str, shown: str, must_exist: bool) -> None:
    """Refuse a ``--db`` that is not a DuckDB store before DuckDB opens it: DuckDB
    opens an existing file of another kind (a CSV, a Parquet file) as an empty
    in-memory database, so an ingest into it would be lost without a word."""
    from sqlalchemy.engine import make_url

    path = make_url(url).database
    if not path or path.startswith(":memory:"):
        return
    file = Path(path)
    # `--db events.csv` is a slip for `abeval ingest events.csv`.
    if is_data_file(file):
        raise StoreError(
            f"{{db}} {shown} names an event file, not a store; the store is a DuckDB file "
            f"such as {DEFAULT_DB} (load events with "
            f"`abeval ingest {shlex.quote(shown)} --db {DEFAULT_DB}`)",
            parameters=("db",),
        )
    if not file.exists():
        if must_exist:
            raise StoreError(
                f"no store at {shown}; load events first with "
                f"`abeval ingest FILE --db {shlex.quote(shown)}`"
            )
        return
    if file.is_dir():
        raise StoreError(
            f"{{db}} {shown} is a directory; name a file such as {DEFAULT_DB} in it",
            parameters=("db",),
        )
    try:
        with file.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise StoreError(f"cannot open the store {shown}: {exc.strerror}") from None
    if head and head[8:12] != b"DUCK":
        raise StoreError(
            f"{shown} is not a DuckDB file, so not an abeval store; pass another {{db}}",
            parameters=("db",),
        )


def _env_lock_timeout() -> float:
    value = os.environ.get("ABEVAL_LOCK_TIMEOUT", "10")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise StoreError(f"ABEVAL_LOCK_TIMEOUT must be a number of seconds >= 0, got {value!r}")
    return seconds


def _lock_holder(message: str) -> str:
    match = re.search(r"PID (\d+)", message)
    return f"process {match.group(1)}" if match else "another process"


def open_store(
    db: str | None = None,
    *,
    read_only: bool = False,
    migrate: bool = True,
    lock_timeout: float | None = None,
    create: bool = True,
    on_lock_wait: Callable[[str], None] | None = None,
) -> Store:
    """Open (and, when writable, create or upgrade) the store.

    A read-only open of a store that lacks migrations raises a
    :class:`StoreError` naming the command that upgrades it. A DuckDB file that
    does not exist is created unless ``read_only`` or ``create=False``.
    ``on_lock_wait`` is called once, with a sentence, when the store is locked by
    another process and abeval starts waiting for it (``lock_timeout`` seconds at
    most; ``math.inf``: as long as it takes).
    """
    url = resolve_url(db)
    if url.startswith(("sc://", "spark://")):  # Spark Connect: no SQLAlchemy engine
        from abeval.store.spark.store import open_spark_store

        timeout = lock_timeout if lock_timeout is not None else _env_lock_timeout()
        return open_spark_store(
            url, read_only=read_only, lock_timeout=timeout, on_lock_wait=on_lock_wait
        )
    shown = display_url(url)
    _check_password(url, shown)
    memory = None
    if url.startswith("duckdb"):
        _check_duckdb_file(url, shown, must_exist=read_only or not create)
        memory = duckdb_memory()
    timeout = lock_timeout if lock_timeout is not None else _env_lock_timeout()
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            engine = _create_engine(url, read_only, memory)
        except Exception as exc:  # unknown dialect, missing driver, bad URL
            raise StoreError(_engine_error(shown, url, exc)) from None
        try:
            with engine.connect():
                pass
            break
        except Exception as exc:  # classify driver errors for the user
            engine.dispose()
            text = str(exc)
            if "Could not set lock" in text or "Conflicting lock" in text:
                if on_lock_wait is not None and not told and time.monotonic() < deadline:
                    told = True
                    on_lock_wait(
                        f"the store {shown} is locked by {_lock_holder(text)}; waiting for it"
                        + ("" if math.isinf(timeout) else f" (up to {timeout:g} s)")
                    )
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise StoreError(
                    f"the store {shown} is locked by {_lock_holder(text)}; "
                    f"wait for it to finish (waited {timeout:g} s, set ABEVAL_LOCK_TIMEOUT "
                    "to wait longer) or use another {db}",
                    parameters=("db",),
                ) from None
            reason = _first_line(without_secrets(text, url))
            raise StoreError(f"cannot open the store {shown}: {reason}{_hint(reason)}") from None
    store = Store(engine=engine, url=url, read_only=read_only, memory=memory)
    if migrate and store.backend.runs_migrations:
        from abeval.store.migrate import ensure_current

        try:
            ensure_current(store)
            # The schema's bookkeeping is no write to report: a signal kept during
            # it stops the command now, not after its work (abeval.signals).
            signals.checkpoint()
        except BaseException:
            # Close the connection: in this process a DuckDB file open read-only
            # cannot be opened again for writing (`abeval migrate`) until it is.
            store.close()
            raise
    return store


def _engine_error(shown: str, url: str, exc: Exception) -> str:
    """One line for a store URL that SQLAlchemy cannot turn into an engine."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    if isinstance(exc, NoSuchModuleError):
        scheme = url.split("://", 1)[0]
        return (
            f"cannot open the store {shown}: SQLAlchemy has no dialect {scheme!r}; "
            "use a DuckDB file path or a URL such as postgresql+psycopg://USER@HOST/DB"
        )
    if isinstance(exc, ModuleNotFoundError):
        return (
            f"cannot open the store {shown}: its driver {exc.name!r} is not installed; "
            "install it, or name an installed driver in the URL (postgresql+psycopg://...)"
        )
    if isinstance(exc, ArgumentError | ValueError):
        reason = without_secrets(str(exc), url)
        return f"cannot open the store {shown}: not a valid SQLAlchemy URL ({reason})"
    return f"cannot open the store {shown}: {_first_line(without_secrets(str(exc), url))}"


def _is_store_fault(exc: BaseException) -> bool:
    """An I/O fault of DuckDB's file, a known damage, or a lost PostgreSQL server."""
    from sqlalchemy.exc import OperationalError

    orig = getattr(exc, "orig", None) or exc
    if any(marker in str(orig) for marker, _ in _FAULT_HINTS):
        return True
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(orig, duckdb.Error):
        return isinstance(orig, duckdb.IOException | duckdb.FatalException)
    return isinstance(exc, OperationalError)


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB saying that Ctrl-C (or SIGTERM) stopped its query:
    an ``InterruptException``, or the ``RuntimeError: Query interrupted`` of a
    raw DuckDB connection."""
    duckdb = sys.modules.get("duckdb")
    orig = getattr(exc, "orig", exc)
    if duckdb is not None and isinstance(orig, duckdb.InterruptException):
        return True
    return isinstance(orig, RuntimeError) and str(orig).startswith("Query interrupted")


# Driver messages of a damaged store, and the fix each one wants.
_FAULT_HINTS = (
    ("Could not read enough bytes", "the file is truncated or damaged; restore it from a backup"),
    ("Corrupt database file", "the file is damaged; restore it from a backup"),
    ("Permission denied", "abeval needs to write the store and its .wal file in that folder"),
    ("Is a directory", "a directory stands where the store's .wal file goes; move it away"),
    ("No space left", "the disk is full; free space and run the command again"),
    ("Read-only file system", "the store is on a read-only file system; copy it elsewhere"),
    (
        "Out of Memory Error",
        "DuckDB needed more memory than ABEVAL_MEMORY_LIMIT allows and could not spill it; "
        "raise ABEVAL_MEMORY_LIMIT or set ABEVAL_TEMP_DIR to a folder on a larger disk",
    ),
)


def _hint(reason: str) -> str:
    """``; <fix>`` for a driver message that names a known fault, else nothing."""
    hint = next((fix for marker, fix in _FAULT_HINTS if marker in reason), None)
    return f"; {hint}" if hint else ""


def _fault_message(shown: str, url: str, exc: BaseException) -> str:
    """``the store X failed: <driver's first line>; <fix>`` with the password masked."""
    orig = getattr(exc, "orig", None) or exc
    reason = _first_line(without_secrets(str(orig), url))
    return f"the store {shown} failed: {reason}{_hint(reason)}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
