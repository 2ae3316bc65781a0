"""Team-defined metrics as the store keeps them: the ``metric_definitions`` table
(``migrations/0009_metric_definitions.sql``; on Spark an own table,
:mod:`abeval.store.backends.spark.own_tables`), one row per metric with its definition as
JSON. What a definition means is :mod:`abeval.analysis.team_metrics`'s; this
module only reads and writes the rows, and lists the event types the store holds
(what a definition may name).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval.store.migrate import has_own_table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

TABLE = "metric_definitions"


@dataclass(frozen=True)
class RecordedDefinition:
    """One row: the metric's name, its definition (a JSON object; the text as
    stored when it is no JSON, a row edited by hand), the file it was read from and
    when it was recorded (UTC, zone-less as stored)."""

    name: str
    definition: Any
    source: str
    recorded_at: datetime


def load(conn: Connection) -> list[RecordedDefinition]:
    """Every recorded definition, by name (none on a Spark store that never had one)."""
    from sqlalchemy import text

    if not has_own_table(conn, TABLE):
        return []
    rows = conn.execute(
        text(f"SELECT name, definition, source, recorded_at FROM {TABLE} ORDER BY name")
    ).fetchall()
    return [RecordedDefinition(str(r[0]), _json(r[1]), str(r[2]), r[3]) for r in rows]


def _json(stored: Any) -> Any:
    """The recorded definition's JSON; the stored value itself when it is no JSON
    (the metric's row then says its definition cannot be read)."""
    try:
        return json.loads(stored)
    except (TypeError, ValueError, RecursionError):
        return stored


def recorded(store: Database) -> list[RecordedDefinition]:
    with store.connect() as conn:
        return load(conn)


def event_types(conn: Connection) -> list[str]:
    """The distinct event types of the ingested rows, sorted."""
    from sqlalchemy import text

    rows = conn.execute(text("SELECT DISTINCT event_type FROM events")).fetchall()
    return sorted(str(r[0]) for r in rows)


def missing_event_types(conn: Connection, events: Sequence[str]) -> list[str]:
    """Those of ``events`` that no ingested row has (one short look-up each)."""
    from sqlalchemy import text

    query = text("SELECT 1 FROM events WHERE event_type = :e LIMIT 1")
    return [e for e in events if conn.execute(query, {"e": e}).first() is None]


def save(
    store: Database, definitions: Mapping[str, Mapping[str, Any]], source: str
) -> list[RecordedDefinition]:
    """Record ``definitions`` (name → JSON object) in one transaction: a name
    already recorded takes the new definition. Returns the rows written."""
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    rows = [
        RecordedDefinition(name, dict(d), source, now) for name, d in sorted(definitions.items())
    ]
    params = [_params(r) for r in rows]
    store.backend.write_own_rows(store, TABLE, "name", [r.name for r in rows], params)
    return rows


def _params(r: RecordedDefinition) -> dict[str, Any]:
    return {
        "name": r.name,
        "definition": json.dumps(r.definition, sort_keys=True),
        "source": r.source,
        "recorded_at": r.recorded_at,
    }


def names(rows: Sequence[RecordedDefinition]) -> list[str]:
    return [r.name for r in rows]


def remove(store: Database, name: str) -> RecordedDefinition | None:
    """Forget the recorded metric ``name`` in one transaction; the row forgotten, or
    None when no metric of that name is recorded (nothing is written)."""
    from abeval.store.backends import backend_of

    with store.writing() as conn:
        found = next((r for r in load(conn) if r.name == name), None)
        if found is not None:
            backend_of(conn).replace_rows(conn, TABLE, "name", [name], [])
    return found
