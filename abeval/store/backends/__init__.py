"""One backend per engine: what differs between DuckDB, PostgreSQL and Spark.

The store's SQL is one portable text; where an engine needs another spelling or
another way of doing a thing (opening it, its faults, describing a table,
temporary tables, building a JSON object, reading a timestamp with a zone,
capping memory, loading rows, replacing rows of abeval's own tables, the bulk
load of ingest), the code asks the store's backend (``database.backend``, or
:func:`backend_of` for a connection, :func:`backend_for_url` for a URL) instead
of testing the engine's name or the URL's prefix.
:class:`~abeval.store.backends.base.Backend` is what any SQLAlchemy engine gets;
each engine abeval supports has a subclass and a package of its own code:
:class:`~abeval.store.backends.duckdb.backend.DuckDBBackend`,
:class:`~abeval.store.backends.postgresql.backend.PostgresBackend`,
:class:`~abeval.store.backends.spark.backend.SparkBackend`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.store.backends.base import Backend
from abeval.store.backends.duckdb.backend import DuckDBBackend
from abeval.store.backends.postgresql.backend import PostgresBackend
from abeval.store.backends.spark.backend import SparkBackend

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

_BACKENDS: dict[str, Backend] = {
    b.name: b for b in (DuckDBBackend(), PostgresBackend(), SparkBackend())
}

__all__ = ["Backend", "backend_for_url", "backend_named", "backend_of"]


def backend_named(name: str) -> Backend:
    """The backend of the engine ``name`` (SQLAlchemy's dialect name: ``duckdb``,
    ``postgresql``, ``spark``); any other engine gets the portable base."""
    found = _BACKENDS.get(name)
    return found if found is not None else Backend(name)


def backend_of(conn: Connection) -> Backend:
    """The backend of the engine ``conn`` talks to."""
    return backend_named(str(conn.dialect.name))


def backend_for_url(url: str) -> Backend:
    """The backend whose engine ``url`` names (``duckdb:///...``,
    ``postgresql+psycopg://...``, ``sc://...``); another SQLAlchemy URL gets the
    portable base, named as SQLAlchemy names its dialect."""
    for backend in _BACKENDS.values():
        if backend.owns_url(url):
            return backend
    return Backend(url.split("://", 1)[0].split("+", 1)[0])
