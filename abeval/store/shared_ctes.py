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

TEMPORARY_TABLES = ("duckdb", "postgresql", "spark")


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

    if conn.dialect.name not in TEMPORARY_TABLES:
        return ctes, []
    tables = []
    for name in names:
        table = f"{prefix}{name}"
        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(text(f"CREATE TEMP TABLE {table} AS WITH {ctes} SELECT * FROM {name}"), params)
        tables.append(table)
        if conn.dialect.name == "postgresql":
            # Fresh temporary tables have no statistics: without them the planner
            # picks nested loops over them.
            conn.execute(text(f"ANALYZE {table}"))
        start, end = cte_span(ctes, name)
        ctes = f"{ctes[:start]}{name} AS (SELECT * FROM {table}){ctes[end:]}"
    return ctes, tables


def drop(conn: Connection, tables: Sequence[str]) -> None:
    from sqlalchemy import text

    for table in tables:
        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
