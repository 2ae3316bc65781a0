"""The rows an ingest rejected (``on_error="skip"``), read back from
``rejected_rows``: what ``abeval rejects`` lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.store.database import Database


@dataclass(frozen=True)
class RejectedRow:
    """One rejected row: where it was (``line`` is the row number of a Parquet
    file, ``format`` says which), the column at fault, why, and the row as read."""

    ingest_id: int
    file: str
    line: int
    column: str | None
    reason: str
    raw: str | None
    format: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ingest_id": self.ingest_id,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "reason": self.reason,
            "raw": self.raw,
        }


def rejected_rows(
    store: Database, *, ingest: int | None = None, limit: int = 50
) -> list[RejectedRow]:
    """The rejected rows of ``ingest`` (default: every ingest) by ingest and line,
    at most ``limit`` (ids and limits beyond 2**62 mean "as many as there are")."""
    from sqlalchemy import text

    from abeval.store.migrate import has_own_table

    limit = min(limit, 2**62)
    where = "WHERE r.ingest_id = :i" if ingest is not None else ""
    with store.connect() as conn:
        if not has_own_table(conn, "rejected_rows"):  # Spark: made by the first ingest
            return []
        rows = conn.execute(
            text(
                "SELECT r.ingest_id, r.file, r.line, r.column_name, r.reason, r.raw, "
                "i.format FROM rejected_rows r LEFT JOIN ingests i "
                f"ON i.ingest_id = r.ingest_id {where} "
                "ORDER BY r.ingest_id, r.line LIMIT :n"
            ),
            {"i": ingest, "n": limit},
        ).fetchall()
    return [RejectedRow(*r) for r in rows]
