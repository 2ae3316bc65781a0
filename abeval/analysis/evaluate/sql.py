"""Small helpers over the in-memory DuckDB database of one ``evaluate`` run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb


def count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The number of rows of ``table``."""
    row = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The first column of the one row ``sql`` returns, as an int."""
    row = con.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The rows of the query just run on ``cur``, as dicts by column name."""
    cols = [d[0] for d in cur.description or []]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def first_line(exc: BaseException) -> str:
    """The first line of an error from DuckDB (its class name when it has no text)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
