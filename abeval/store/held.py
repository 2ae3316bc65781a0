"""A store held open between calls (:func:`abeval.open`): read-only while it is
read, writable only for the duration of a write.

DuckDB lets many processes open a file read-only at once, or one process open it
for writing; within one process every connection to a file must share one
configuration. So a DuckDB file is held read-only between calls (another process
can read it meanwhile), and a write closes that engine, opens the file for writing
(waiting for a writer lock held elsewhere, with a line on standard error), writes,
closes and goes back to read-only: the store is never left locked for writing
between calls. A store that does not exist yet, or needs migrating, is
created/migrated in a short write when it is opened. Two stores of one file in
one process share DuckDB's database of it (their settings are the same), so both
read; a write through one while the other is open is refused in one line
(:class:`~abeval.errors.StoreHeldHere`). PostgreSQL, Spark and an
in-memory DuckDB database have no file lock: their one database stays open as
opened.

Kept summaries (:mod:`abeval.analysis.kept`) computed while a DuckDB file is held
read-only wait in :attr:`HeldStore.keeping` until the API's call returns
(:meth:`HeldStore.keep_summaries`): then the file is opened for writing only if
no other process holds it, without waiting, for one short transaction; else they
are dropped, silently. A store opened read-only keeps none."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from abeval.errors import AbevalError, StoreClosed
from abeval.store.backends import backend_for_url
from abeval.store.database import Database
from abeval.store.engine import display_url, open_store, resolve_url

if TYPE_CHECKING:
    from abeval.store.kept import KeptRow


def _tell(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class HeldStore:
    """The database of an open store: :meth:`current` for a read, :meth:`writing`
    for a write, :meth:`close` for good (later calls raise :class:`StoreClosed`)."""

    def __init__(self, db: str | None, *, read_only: bool, create: bool, migrate: bool) -> None:
        self.url = resolve_url(db)
        self.display = display_url(self.url)
        self._closed = False
        self._database: Database | None = None
        self._writer: Database | None = None
        #: Kept summaries computed by reads of the file held read-only, not written yet.
        self.keeping: list[KeptRow] = []
        #: How deep the API's calls are nested (summaries are written at 0).
        self.calls = 0
        #: Read-only between calls, writable for a write (a DuckDB file's lock).
        self.switching = not read_only and backend_for_url(self.url).file_locked(self.url)
        if not self.switching:
            self._database = open_store(
                self.url, read_only=read_only, create=create, migrate=migrate
            )
            return
        if create and not Path(make_url(self.url).database or "").exists():
            self._short_write(create=True, migrate=migrate)
        database = open_store(self.url, read_only=True, migrate=False, create=False)
        if migrate and _needs_migrating(database):
            database.close()
            self._short_write(create=False, migrate=True)
            database = open_store(self.url, read_only=True, migrate=False, create=False)
        database.keeping = self.keeping
        self._database = database

    def _short_write(self, *, create: bool, migrate: bool) -> None:
        writer = open_store(
            self.url, read_only=False, create=create, migrate=migrate, on_lock_wait=_tell
        )
        writer.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def current(self) -> Database:
        """The database to read (opened again read-only if a write could not)."""
        if self._closed:
            raise StoreClosed(f"the store {self.display} is closed; open it again with abeval.open")
        if self._writer is not None:  # a read within a write sees the write's database
            return self._writer
        if self._database is None:
            self._database = open_store(self.url, read_only=True, migrate=False, create=False)
            if self.switching:
                self._database.keeping = self.keeping
        return self._database

    def keep_summaries(self) -> None:
        """Write the kept summaries waiting in :attr:`keeping`: the file opened for
        writing for one short transaction if no other process (and no other store
        of this process) holds it, without waiting; else they are dropped. Then
        the file is held read-only again, as between any two calls."""
        from abeval.store.kept import write_kept

        rows, self.keeping[:] = list(self.keeping), []
        if not rows or not self.switching or self._closed or self._writer is not None:
            return
        reading, self._database = self._database, None
        if reading is not None:
            reading.close()
        try:
            writer = open_store(
                self.url, read_only=False, create=False, migrate=False, lock_timeout=0
            )
        except AbevalError:  # held elsewhere, or a disk that refuses the write
            return
        try:
            write_kept(writer, rows)
        finally:
            writer.close()
        self.current()

    @contextmanager
    def writing(self) -> Iterator[Database]:
        """The database to write: a DuckDB file's read-only engine is closed and the
        file opened for writing (waiting for another process's writer lock, told on
        standard error) for the block, then closed and held read-only again."""
        reading = self.current()
        if not self.switching or reading is self._writer:
            yield reading
            return
        self._database = None
        reading.close()
        writer = open_store(
            self.url, read_only=False, create=False, migrate=False, on_lock_wait=_tell
        )
        self._writer = writer
        try:
            yield writer
        finally:
            self._writer = None
            writer.close()
        self.current()  # back to read-only now, so that the file is held as between calls

    def close(self) -> None:
        """Close the database for good (closing again does nothing)."""
        self._closed = True
        database, self._database = self._database, None
        if database is not None:
            database.close()


def _needs_migrating(database: Database) -> bool:
    from abeval.store.migrate import pending

    return bool(pending(database))
