"""What was decided about an experiment (table ``experiment_outcomes``, migration
0013): its owner, hypothesis, tags, status and the date of the decision, as
``abeval experiment set`` records them and ``experiment unset`` forgets them.

A tag given again is kept once; ``--tag`` adds to the tags recorded and
``experiment unset --tags`` forgets them all. ``decided_on`` needs a status
other than ``running``: a status set back to running, or forgotten, forgets the
date too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval.errors import OptionError
from abeval.store.migrate import has_own_table

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sqlalchemy.engine import Connection

TABLE = "experiment_outcomes"
#: What ``experiment unset`` forgets of an outcome, by its parameter name.
OUTCOME_FIELDS = ("owner", "hypothesis", "tags", "status", "decided_on")


@dataclass(frozen=True)
class Outcome:
    """What is recorded of an experiment's outcome; None (no tags) where nothing is."""

    experiment: str
    owner: str | None = None
    hypothesis: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None
    decided_on: str | None = None  # YYYY-MM-DD

    def recorded(self) -> bool:
        return any((self.owner, self.hypothesis, self.tags, self.status, self.decided_on))


@dataclass(frozen=True)
class OutcomeChange:
    """An ``experiment set``'s outcome options, checked (None: not given; ``tags``
    are added to those recorded)."""

    owner: str | None = None
    hypothesis: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None
    decided_on: str | None = None

    def given(self) -> bool:
        return any((self.owner, self.hypothesis, self.tags, self.status, self.decided_on))


def changed(current: Outcome, change: OutcomeChange, removed: Iterable[str] = ()) -> Outcome:
    """``current`` with ``removed`` (names of :data:`OUTCOME_FIELDS`) forgotten and
    ``change`` applied; an :class:`OptionError` on ``decided_on`` when the status
    it would be recorded with is none or ``running``."""
    gone = set(removed)
    out = replace(
        current,
        owner=None if "owner" in gone else current.owner,
        hypothesis=None if "hypothesis" in gone else current.hypothesis,
        tags=() if "tags" in gone else current.tags,
        status=None if "status" in gone else current.status,
        decided_on=None if gone & {"status", "decided_on"} else current.decided_on,
    )
    out = replace(
        out,
        owner=change.owner if change.owner is not None else out.owner,
        hypothesis=change.hypothesis if change.hypothesis is not None else out.hypothesis,
        tags=tuple(dict.fromkeys((*out.tags, *change.tags))),
        status=change.status if change.status is not None else out.status,
    )
    if change.status == "running":
        out = replace(out, decided_on=None)
    if change.decided_on is not None:
        if out.status in (None, "running"):
            raise OptionError(
                "decided_on",
                change.decided_on,
                f"{current.experiment!r} is {out.status or 'not decided'}; give {{status}} "
                "shipped, rolled_back or abandoned with the date of the decision",
                mentions=("status",),
            )
        out = replace(out, decided_on=change.decided_on)
    return out


def _outcome(row: Any) -> Outcome:
    return Outcome(
        experiment=str(row[0]),
        owner=row[1],
        hypothesis=row[2],
        tags=tuple(json.loads(row[3])) if row[3] else (),
        status=row[4],
        decided_on=row[5],
    )


def read_outcomes(conn: Connection, experiment: str | None = None) -> dict[str, Outcome]:
    """The outcomes recorded (of ``experiment`` only, when given), by experiment."""
    from sqlalchemy import text

    if not has_own_table(conn, TABLE):  # Spark: made by the first write
        return {}
    where = "WHERE experiment = :e" if experiment is not None else ""
    rows = conn.execute(
        text(
            "SELECT experiment, owner, hypothesis, tags, status, decided_on "
            f"FROM {TABLE} {where} ORDER BY experiment"
        ),
        {"e": experiment} if experiment is not None else {},
    )
    return {str(r[0]): _outcome(r) for r in rows}


def read_outcome(conn: Connection, experiment: str) -> Outcome:
    """The outcome recorded for ``experiment`` (an empty one when none is)."""
    return read_outcomes(conn, experiment).get(experiment, Outcome(experiment))


def write_outcome(conn: Connection, outcome: Outcome) -> None:
    """Replace the experiment's row (removed when nothing is left to record), on
    the caller's transaction."""
    from abeval.store.backends import backend_of

    rows: list[Mapping[str, Any]] = []
    if outcome.recorded():
        rows.append({
            "experiment": outcome.experiment,
            "owner": outcome.owner,
            "hypothesis": outcome.hypothesis,
            "tags": json.dumps(list(outcome.tags)) if outcome.tags else None,
            "status": outcome.status,
            "decided_on": outcome.decided_on,
            "updated_at": datetime.now(UTC).replace(tzinfo=None),
        })  # fmt: skip
    backend_of(conn).replace_rows(conn, TABLE, "experiment", [outcome.experiment], rows)
