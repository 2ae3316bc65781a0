"""The ingests behind a report: which files brought the experiment's events,
with their checksums, rows read and inserted, when, and how many of the
experiment's events each holds (the report's methodology shows them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


#: The columns of ``ingests`` a report shows (:func:`ingest_row`).
INGEST_COLUMNS = ("ingest_id", "source", "checksum", "rows_read", "rows_inserted", "finished_at")

_OF_INGESTS = ", ".join(f"i.{c}" for c in INGEST_COLUMNS)

#: The ingests of the experiment bound to ``:experiment``, with its events in each.
INGESTS_SELECT = (
    f"SELECT {_OF_INGESTS}, COUNT(*) AS events FROM events e JOIN ingests i "
    f"ON i.ingest_id = e.ingest_id WHERE e.experiment = :experiment GROUP BY {_OF_INGESTS}"
)


def ingests(conn: Connection, experiment: str) -> tuple[dict[str, Any], ...]:
    """The ingests that brought the experiment's events (the report's provenance):
    source file, checksum, rows read and inserted, when, and how many of the
    experiment's events each holds; by ingest id."""
    from sqlalchemy import text

    rows = conn.execute(text(f"{INGESTS_SELECT} ORDER BY i.ingest_id"), {"experiment": experiment})
    return tuple(ingest_row(r) for r in rows)


def ingest_row(r: Any) -> dict[str, Any]:
    """One ingest as the report shows it, from :data:`INGEST_COLUMNS` and the count
    of the experiment's events."""
    return {
        "ingest_id": int(r[0]),
        "source": r[1],
        "checksum": r[2],
        "rows_read": int(r[3]),
        "rows_inserted": int(r[4]),
        "finished_at": r[5].isoformat(sep="T") if r[5] else None,
        "events_in_experiment": int(r[6]),
    }
