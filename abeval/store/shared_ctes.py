"""Compute common table expressions once and share them between queries.

A report runs several queries that start from the same parts (the population,
the ranked lists; :mod:`abeval.store.sql.parts`). Engines recompute a CTE in every
query that names it, so :func:`materialize` evaluates the chosen parts once into
temporary tables (on Spark, cached views: abeval/store/backends/spark/dialect.py) and
returns the parts with those reading their tables, found by name. Engines without
temporary tables keep the parts as they are: the results are the same, only slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from abeval.store.backends.faults import is_aborted

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.sql.parts import With


def materialize(
    conn: Connection,
    ctes: With,
    names: Sequence[str],
    params: Mapping[str, Any],
    prefix: str,
) -> tuple[With, list[str]]:
    """Evaluate the parts ``names`` (in order) into temporary tables ``prefix`` +
    name; return the parts with those reading their tables, and the tables for
    :func:`drop`. An engine without temporary tables keeps the parts as they are:
    the same results, computed again by each query."""
    from abeval.store.backends import backend_of

    ctes.require(*names)  # every name checked before any table is made
    backend = backend_of(conn)
    if not backend.temporary_tables:
        return ctes, []
    tables: list[str] = []
    for name in names:
        table = f"{prefix}{name}"
        # The whole WITH, not only the parts ``name`` needs: PostgreSQL inlines a CTE
        # that one part reads, and with the events' CTE inlined into the ranked
        # lists its planner took a plan 8x slower (200,000 events: 25 s against
        # 3 s); named by several parts, it is computed once, as it was measured.
        backend.materialize(conn, table, ctes.sql(f"SELECT * FROM {name}"), params)
        tables.append(table)
        ctes = ctes.reading({name: table})
    return ctes, tables


def drop(conn: Connection, tables: Iterable[str]) -> None:
    """Drop the temporary ``tables`` (``Backend.drop_temporary``: on Spark nothing
    is sent, the session's views go with it); nothing when a failed statement has aborted the
    transaction (DuckDB and PostgreSQL then refuse every statement): the tables go
    with the rollback or the connection, and the failure that aborted it, on its
    way out, is what the user must see, not a refused ``DROP``."""
    from sqlalchemy.exc import DBAPIError

    from abeval.store.backends import backend_of

    backend = backend_of(conn)
    for table in tables:
        try:
            backend.drop_temporary(conn, table)
        except DBAPIError as exc:
            if is_aborted(exc):
                return
            raise
