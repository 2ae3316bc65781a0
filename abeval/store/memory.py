"""The memory cap of the steps after the online pass (the replay, the off-policy
sums), asked of the store's backend: DuckDB's limit lowered while they run
(:mod:`abeval.store.backends.duckdb.memory`), nothing elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from abeval.store.backends import backend_of
from abeval.store.backends.duckdb.memory import MemoryCap

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@contextmanager
def memory_capped(conn: Connection) -> Iterator[MemoryCap]:
    """On DuckDB, the cap for the block (:class:`MemoryCap`), then the store's limit
    again; elsewhere a cap that does nothing."""
    cap = MemoryCap(conn)
    if backend_of(conn).caps_memory:
        cap.lower()
    try:
        yield cap
    finally:
        cap.restore()
