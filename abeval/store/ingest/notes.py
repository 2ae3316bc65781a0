"""What an ingest says beside its counts: what normalising changed (ids trimmed,
event types lower-cased), timestamps far from the rest of their experiment, and
experiments or arms whose names differ only in case or spaces (which the
analysis keeps apart: ``Control`` and ``control`` are two arms).

Portable SQL over the store, run in the ingest's transaction on its own rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from abeval.errors import close_matches
from abeval.store.arm_lists import parse_arms
from abeval.store.events_format import EVENT_TYPES

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: A timestamp this far from the median of its experiment's rows in the file is flagged.
FAR_DAYS = 365
# Characters that make two names look alike when removed (as trimming does, and inside).
_INVISIBLE = " \t\r\n\ufeff\u200b"


@dataclass(frozen=True)
class Normalised:
    """Rows whose identifiers were trimmed, and rows whose event_type was lower-cased."""

    trimmed: int = 0
    lowercased: int = 0


@dataclass(frozen=True)
class Notes:
    """The notes and warnings of one ingest, and its far timestamps."""

    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    far_timestamps: int = 0
    far_range: tuple[str, str] | None = None


def notes_for(conn: Connection, ingest_id: int, normalised: Normalised, inserted: bool) -> Notes:
    """The notes of ingest ``ingest_id``: what normalising changed in the rows read
    and, when it ``inserted`` rows (they are in ``events``), their far timestamps
    and look-alike names."""
    notes = []
    if normalised.trimmed:
        notes.append(
            f"{_rows(normalised.trimmed)} had spaces around an id (experiment, arm, user_id, "
            "request_id, item_id or event_id), or a byte-order mark starting the line: trimmed"
        )
    if normalised.lowercased:
        notes.append(f"{_rows(normalised.lowercased)} had event_type in capitals: lower-cased")
    if not inserted:
        return Notes(notes=notes)
    far, first, last = _far_timestamps(conn, ingest_id)
    if far:
        notes.append(
            f"{_rows(far)} with a timestamp more than {FAR_DAYS} days from the rest of "
            f"{'its' if far == 1 else 'their'} experiment ({first} .. {last}); check ts"
        )
    return Notes(
        notes=notes,
        warnings=_look_alikes(conn, ingest_id),
        far_timestamps=far,
        far_range=(first, last) if far else None,
    )


def _rows(n: int) -> str:
    return f"{n:,} row{'' if n == 1 else 's'}"


def _far_timestamps(conn: Connection, ingest_id: int) -> tuple[int, str, str]:
    """How many rows of the ingest lie more than :data:`FAR_DAYS` days from the
    median timestamp of their experiment's rows in the ingest, and their range."""
    from sqlalchemy import text

    spread = text(
        "SELECT experiment FROM events WHERE ingest_id = :i GROUP BY experiment "
        f"HAVING MAX(ts) - MIN(ts) > INTERVAL '{2 * FAR_DAYS} days'"
    )
    if not conn.execute(spread, {"i": ingest_id}).fetchall():
        return 0, "", ""
    row = conn.execute(
        text(
            "WITH m AS (SELECT experiment, PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY ts) "
            "AS mid FROM events WHERE ingest_id = :i GROUP BY experiment) "
            "SELECT COUNT(*), MIN(e.ts), MAX(e.ts) FROM events e JOIN m "
            "ON m.experiment = e.experiment WHERE e.ingest_id = :i AND "
            f"(e.ts < m.mid - INTERVAL '{FAR_DAYS} days' OR e.ts > m.mid + INTERVAL "
            f"'{FAR_DAYS} days')"
        ),
        {"i": ingest_id},
    ).one()
    if not row[0]:
        return 0, "", ""
    return int(row[0]), _when(row[1]), _when(row[2])


def _when(ts: datetime | str) -> str:
    return ts.isoformat(sep=" ") if isinstance(ts, datetime) else str(ts)


def _squash(name: str) -> str:
    """A name without case, spaces or invisible characters."""
    return "".join(ch for ch in name.casefold() if ch not in _INVISIBLE)


def _look_alikes(conn: Connection, ingest_id: int) -> list[str]:
    """Warnings for experiments, and arms of one experiment, that differ only in
    case or spaces, where the ingest touched one of them."""
    from sqlalchemy import text

    pairs = conn.execute(
        text("SELECT DISTINCT experiment, event_type FROM events WHERE ingest_id = :i"),
        {"i": ingest_id},
    ).fetchall()
    touched = {r[0] for r in pairs}
    if not touched:
        return []
    rows = conn.execute(text("SELECT experiment, arms FROM experiments")).fetchall()
    out = _team_types_like_builtins({str(r[1]) for r in pairs})
    out += [
        f"experiments {_names(group)} differ only in case or spaces: they are analysed as "
        "different experiments; fix the names in the files if they are one"
        for group in _groups(r[0] for r in rows)
        if touched & set(group)
    ]
    for experiment, arms in rows:
        if experiment in touched and arms:
            out += [
                f"experiment {experiment!r}: arms {_names(group)} differ only in case or "
                "spaces: they are analysed as different arms; fix the names in the files "
                "if they are one"
                for group in _groups(parse_arms(arms))
            ]
    return out


def _team_types_like_builtins(types: set[str]) -> list[str]:
    """Warnings for event types kept as a team's own that look like a misspelt
    built-in type (``clik``)."""
    out = []
    for kind in sorted(types - set(EVENT_TYPES)):
        close = close_matches(kind, EVENT_TYPES)
        if close:
            out.append(
                f"event type {kind!r} is not built in and is kept as a team's own type "
                f"(docs/metrics.md#team-defined-metrics); did you mean {' or '.join(close)}? "
                "fix the files if so"
            )
    return out


def _groups(names: Iterable[str]) -> list[list[str]]:
    """The sets of two or more names that squash to the same text."""
    by: dict[str, list[str]] = {}
    for name in names:
        by.setdefault(_squash(name), []).append(name)
    return [sorted(set(g)) for g in by.values() if len(set(g)) > 1]


def _names(group: list[str]) -> str:
    return " and ".join(repr(n) for n in group)
