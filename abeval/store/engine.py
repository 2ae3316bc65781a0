"""Open the store: resolve ``--db`` / ``ABEVAL_DB``, open its database through the
backend of its URL (:mod:`abeval.store.backends`), apply migrations.

DuckDB's memory limit and spill folder come from ``ABEVAL_MEMORY_LIMIT`` and
``ABEVAL_TEMP_DIR`` (:mod:`abeval.store.backends.duckdb.memory`). A DuckDB file
admits one writing process at a time. abeval waits for a lock
held by another process for up to ``ABEVAL_LOCK_TIMEOUT`` seconds (default 10),
then stops with a message that names the process holding it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from abeval import signals
from abeval.store.backends import backend_for_url
from abeval.store.backends.duckdb.files import DEFAULT_DB, file_url
from abeval.store.database import Database

__all__ = ["DEFAULT_DB", "Database", "display_url", "open_store", "resolve_url"]


def resolve_url(db: str | None) -> str:
    """Turn ``--db`` (a path or a SQLAlchemy URL), else ``ABEVAL_DB``, else the
    default file into a URL: a path names a DuckDB file."""
    value = db or os.environ.get("ABEVAL_DB") or DEFAULT_DB
    if "://" in value:
        return value
    return file_url(value)


def display_url(url: str) -> str:
    """The URL as it may be shown to a user: its password and secret parameters
    masked, and a DuckDB URL shown as its file path (the backend's ``display_url``)."""
    return backend_for_url(url).display_url(url)


def open_store(
    db: str | None = None,
    *,
    read_only: bool = False,
    migrate: bool = True,
    lock_timeout: float | None = None,
    create: bool = True,
    on_lock_wait: Callable[[str], None] | None = None,
) -> Database:
    """Open (and, when writable, create or upgrade) the store.

    A read-only open of a store that lacks migrations raises a
    :class:`StoreError` naming the command that upgrades it. A DuckDB file that
    does not exist is created unless ``read_only`` or ``create=False``.
    ``on_lock_wait`` is called once, with a sentence, when the store is locked by
    another process and abeval starts waiting for it (``lock_timeout`` seconds at
    most; ``math.inf``: as long as it takes).
    """
    url = resolve_url(db)
    database = backend_for_url(url).open(
        url, read_only, create=create, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait
    )
    if migrate and database.backend.runs_migrations:
        from abeval.store.migrate import ensure_current

        try:
            ensure_current(database)
            # The schema's bookkeeping is no write to report: a signal kept during
            # it stops the command now, not after its work (abeval.signals).
            signals.checkpoint()
        except BaseException:
            # Close the connection: in this process a DuckDB file open read-only
            # cannot be opened again for writing (`abeval migrate`) until it is.
            database.close()
            raise
    return database
