"""Compute common table expressions once and share them between queries.

A report runs several queries that start from the same CTEs (the population,
the ranked lists). Engines recompute a CTE in every query that names it, so
:func:`materialize` evaluates the chosen CTEs once into temporary tables and
rewrites the CTE text to read them (on Spark, cached views:
abeval/store/spark/dialect.py). Engines without temporary tables keep the
CTEs as they are: the results are the same, only slower.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def cte_span(ctes: str, name: str) -> tuple[int, int]:
    """Start and end (after the closing parenthesis) of ``name AS (...)`` in ``ctes``."""
    start = ctes.index(f"{name} AS (")
    depth = 0
    for i in range(ctes.index("(", start), len(ctes)):
        if ctes[i] == "(":
            depth += 1
        elif ctes[i] == ")":
            depth -= 1
            if depth == 0:
                return start, i + 1
    raise ValueError(f"unbalanced CTE {name}")


def materialize(
    conn: Connection,
    ctes: str,
    names: Sequence[str],
    params: Mapping[str, Any],
    prefix: str,
) -> tuple[str, list[str]]:
    """Evaluate the CTEs ``names`` (in order) into temporary tables; return CTEs
    that read them, and the tables for :func:`drop`."""
    from sqlalchemy import text

    from abeval.store.backends import backend_of

    backend = backend_of(conn)
    if not backend.temporary_tables:
        return ctes, []
    tables = []
    for name in names:
        table = f"{prefix}{name}"
        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(text(f"CREATE TEMP TABLE {table} AS WITH {ctes} SELECT * FROM {name}"), params)
        tables.append(table)
        backend.analyze_temporary(conn, table)
        start, end = cte_span(ctes, name)
        ctes = f"{ctes[:start]}{name} AS (SELECT * FROM {table}){ctes[end:]}"
    return ctes, tables


def drop(conn: Connection, tables: Sequence[str]) -> None:
    """Drop the temporary ``tables``; nothing when a failed statement has aborted the
    transaction (DuckDB and PostgreSQL then refuse every statement): the tables go
    with the rollback or the connection, and the failure that aborted it, on its
    way out, is what the user must see, not a refused ``DROP``."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    for table in tables:
        try:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        except DBAPIError as exc:
            if is_aborted(exc):
                return
            raise


def is_aborted(exc: BaseException) -> bool:
    """Whether ``exc`` is the engine refusing a statement because an earlier one
    failed in the same transaction (DuckDB and PostgreSQL say so alike): a clean-up
    step that meets it leaves the earlier failure to be reported."""
    return "transaction is aborted" in str(exc).lower()
