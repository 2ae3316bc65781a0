"""One backend per engine: what differs between DuckDB, PostgreSQL and Spark.

The store's SQL is one portable text; where an engine needs another spelling or
another way of doing a thing (describing a table, temporary tables, building a
JSON object, reading a timestamp with a zone, capping memory, loading rows,
replacing rows of abeval's own tables), the code asks the store's backend
(``store.backend``, or :func:`backend_of` for a connection) instead of testing
the engine's name. :class:`~abeval.store.backends.base.Backend` is what any
SQLAlchemy engine gets; each engine abeval supports has a subclass:
:class:`~abeval.store.backends.duck.DuckDBBackend`,
:class:`~abeval.store.backends.postgres.PostgresBackend`,
:class:`~abeval.store.backends.spark.SparkBackend`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.store.backends.base import Backend
from abeval.store.backends.duck import DuckDBBackend
from abeval.store.backends.postgres import PostgresBackend
from abeval.store.backends.spark import SparkBackend

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

_BACKENDS: dict[str, Backend] = {
    b.name: b for b in (DuckDBBackend(), PostgresBackend(), SparkBackend())
}

__all__ = ["Backend", "backend_named", "backend_of", "dialect_name"]


def backend_named(name: str) -> Backend:
    """The backend of the engine ``name`` (SQLAlchemy's dialect name: ``duckdb``,
    ``postgresql``, ``spark``); any other engine gets the portable base."""
    found = _BACKENDS.get(name)
    return found if found is not None else Backend(name)


def backend_of(conn: Connection) -> Backend:
    """The backend of the engine ``conn`` talks to."""
    return backend_named(str(conn.dialect.name))


def dialect_name(engine: Engine) -> str:
    """SQLAlchemy's name of the engine's dialect."""
    return str(engine.dialect.name)
