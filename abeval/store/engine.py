"""Open the store: resolve ``--db`` / ``ABEVAL_DB``, create the engine, apply migrations.

A DuckDB file admits one writing process at a time. abeval waits for a lock
held by another process for up to ``ABEVAL_LOCK_TIMEOUT`` seconds (default 10),
then stops with a message that names the process holding it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

DEFAULT_DB = "abeval.duckdb"
_LOCK_RE = re.compile(r"Could not set lock on file.*?(PID \d+)?\)?", re.S)


def resolve_url(db: str | None) -> str:
    """Turn ``--db`` (a path or a SQLAlchemy URL), else ``ABEVAL_DB``, else the
    default file into a SQLAlchemy URL."""
    value = db or os.environ.get("ABEVAL_DB") or DEFAULT_DB
    if "://" in value:
        return value
    return "duckdb:///" + str(Path(value).expanduser().resolve())


def display_url(url: str) -> str:
    """The URL as it may be shown to a user: the password is masked, and a
    DuckDB URL is shown as its file path."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.drivername.startswith("duckdb"):
        return parsed.database or ":memory:"
    return parsed.render_as_string(hide_password=True)


@dataclass
class Store:
    """An open store: a SQLAlchemy engine plus what abeval knows about it."""

    engine: Engine
    url: str
    read_only: bool

    @property
    def dialect(self) -> str:
        """``duckdb``, ``postgresql``, ``hive`` ..."""
        return str(self.engine.dialect.name)

    @property
    def is_duckdb(self) -> bool:
        return self.dialect == "duckdb"

    @property
    def display(self) -> str:
        return display_url(self.url)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A connection inside one transaction, committed on success."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()


def _create_engine(url: str, read_only: bool) -> Engine:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    if url.startswith("duckdb"):
        # One connection per process: DuckDB serialises writers anyway, and a
        # single connection lets ingest reuse it through ``driver_connection``.
        from sqlalchemy import event

        engine = create_engine(url, poolclass=StaticPool, connect_args={"read_only": read_only})

        @event.listens_for(engine, "connect")
        def _utc(dbapi_connection: Any, _record: Any) -> None:
            # Timestamps without a zone are UTC whatever the machine's zone is.
            dbapi_connection.execute("SET TimeZone = 'UTC'")
            # abeval reports its own progress; DuckDB's bar would garble stdout.
            dbapi_connection.execute("SET enable_progress_bar = false")

        return engine
    return create_engine(url, pool_pre_ping=True)


def _lock_holder(message: str) -> str:
    match = re.search(r"PID (\d+)", message)
    return f"process {match.group(1)}" if match else "another process"


def open_store(
    db: str | None = None,
    *,
    read_only: bool = False,
    migrate: bool = True,
    lock_timeout: float | None = None,
) -> Store:
    """Open (and, when writable, create or upgrade) the store.

    A read-only open of a store that lacks migrations raises a
    :class:`StoreError` naming the command that upgrades it.
    """
    url = resolve_url(db)
    shown = display_url(url)
    if url.startswith("duckdb") and read_only:
        path = url.split("duckdb:///", 1)[-1]
        if path and path != ":memory:" and not Path(path).exists():
            raise StoreError(
                f"no store at {shown}; load events first with `abeval ingest FILE --db {shown}`"
            )
    timeout = (
        lock_timeout
        if lock_timeout is not None
        else float(os.environ.get("ABEVAL_LOCK_TIMEOUT", "10"))
    )
    deadline = time.monotonic() + timeout
    while True:
        engine = _create_engine(url, read_only)
        try:
            with engine.connect():
                pass
            break
        except Exception as exc:  # noqa: BLE001 - classify driver errors for the user
            engine.dispose()
            text = str(exc)
            if "Could not set lock" in text or "Conflicting lock" in text:
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise StoreError(
                    f"the store {shown} is locked by {_lock_holder(text)}; "
                    f"wait for it to finish (waited {timeout:g} s, set ABEVAL_LOCK_TIMEOUT "
                    "to wait longer) or use another --db"
                ) from None
            raise StoreError(f"cannot open the store {shown}: {_first_line(text)}") from None
    store = Store(engine=engine, url=url, read_only=read_only)
    if migrate:
        from abeval.store.migrate import ensure_current

        ensure_current(store)
    return store


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def scalar(conn: Connection, sql: str, **params: Any) -> Any:
    """Run ``sql`` and return the first column of the first row."""
    from sqlalchemy import text

    return conn.execute(text(sql), params).scalar()
