"""An open database: the SQLAlchemy engine of a store and the backend that knows its
engine (:mod:`abeval.store.backends`). :func:`abeval.store.open_store` makes one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval import signals

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from abeval.store.backends.base import Backend
    from abeval.store.backends.duckdb.memory import DuckDBMemory
    from abeval.store.kept import KeptRow


@dataclass
class Database:
    """An open store's database: a SQLAlchemy engine plus what abeval knows about it.

    Use it as a context manager (``with open_store(db) as database:``) so that the
    engine is disposed of, and a DuckDB file unlocked, however the block ends."""

    engine: Engine
    url: str
    read_only: bool
    #: What this engine does its own way (:mod:`abeval.store.backends`).
    backend: Backend
    memory: DuckDBMemory | None = None  # DuckDB's memory limit and spill folder
    #: Kept summaries computed and not written yet (:mod:`abeval.analysis.kept`);
    #: None: this store keeps none (opened read-only).
    keeping: list[KeptRow] | None = None

    def __post_init__(self) -> None:
        if self.keeping is None and not self.read_only:
            self.keeping = []

    @property
    def dialect(self) -> str:
        """``duckdb``, ``postgresql``, ``spark`` ...: the backend's engine."""
        return self.backend.name

    @property
    def display(self) -> str:
        return self.backend.display_url(self.url)

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
        line naming this store, and DuckDB's interrupt into ``KeyboardInterrupt``
        (the backend's :meth:`~abeval.store.backends.base.Backend.fault`).

        Only faults of the store, its disk or its server are turned: other database
        errors go on unchanged, for the caller that expects them (a bad row makes
        ingest fall back to its staged load) or as the bug they are."""
        try:
            yield
        except Exception as exc:
            turned = self.backend.fault(self.display, self.url, exc)
            if turned is None:
                raise
            raise turned from None

    def close(self) -> None:
        # the spill folder of a database another store of the file still uses is kept
        kept = self.memory is not None and self.backend.shared_elsewhere(self.engine)
        with signals.held():
            self.engine.dispose()
        if self.memory is not None and not kept:
            self.memory.remove_spill_dir()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
