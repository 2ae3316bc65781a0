"""What the store holds of an experiment at one moment: the last event, the days
since the first exposure and the users exposed, read when a plan is recorded
(docs/usage.md#saved-configuration), so that a plan can be told apart from one made
after the data were seen."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class DataStamp:
    """``last_event``: the latest event's time (None without events); ``days``: the
    days from the first exposure's to the last event's, both counted (0 without an
    exposure), as the decision counts a plan's days; ``users``: the users exposed
    to exactly one arm (those in several arms are left out of the analysis)."""

    last_event: datetime | None
    days: int
    users: int


def data_stamp(conn: Connection, experiment: str) -> DataStamp:
    """The :class:`DataStamp` of ``experiment``'s ingested events now."""
    from sqlalchemy import text

    first, last = conn.execute(
        text(
            "SELECT MIN(CASE WHEN event_type = 'exposure' THEN ts END), MAX(ts) "
            "FROM events WHERE experiment = :e"
        ),
        {"e": experiment},
    ).one()
    users = conn.execute(
        text(
            "SELECT COUNT(*) FROM (SELECT user_id FROM events WHERE experiment = :e "
            "AND event_type = 'exposure' GROUP BY user_id HAVING COUNT(DISTINCT arm) = 1) x"
        ),
        {"e": experiment},
    ).scalar()
    first, last = _time(first), _time(last)
    days = (last.date() - first.date()).days + 1 if first and last else 0
    return DataStamp(last_event=last, days=max(days, 0), users=int(users or 0))


def _time(value: object) -> datetime | None:
    """A timestamp as the engine returns it (a datetime, or text on some)."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))
