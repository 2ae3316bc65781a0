"""What is in the store: experiments, their arms, users and events, and the
settings a user records for them (control arm, expected split)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from abeval.errors import AbevalError, NotFoundError, OptionError, close_matches
from abeval.store.arm_lists import parse_arms
from abeval.store.backends import backend_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.engine import Connection

    from abeval.store.database import Database
    from abeval.store.ope_target import RecordedTargets, TargetCheck, TargetRow


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    users: int
    events: dict[str, int]


@dataclass(frozen=True)
class ExperimentSummary:
    experiment: str
    arms: list[ArmSummary]
    first_ts: str | None
    last_ts: str | None
    users_in_several_arms: int
    control_arm: str | None
    split: dict[str, float] | None = field(default=None)
    #: The source it is read from in place (``abeval source add``); None when ingested.
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: control, split, window start, window end as given to ``experiment set`` (None:
#: not given).
SettingsChange = tuple[str | None, str | None, datetime | None, datetime | None]


@dataclass(frozen=True)
class ExperimentSettings:
    """What the user recorded for an experiment; defaults when nothing was."""

    experiment: str
    arms: list[str]
    control_arm: str | None
    split: dict[str, float] | None
    window_from: datetime | None = None
    window_to: datetime | None = None


def _iso(value: Any) -> str | None:
    return value.isoformat(sep="T") if value is not None else None


def list_experiments(store: Database, only: str | None = None) -> list[ExperimentSummary]:
    """The store's (ingested) experiments; ``abeval.store.sources`` lists those read
    in place."""
    with store.connect() as conn:
        return summaries(conn, only)


def first_events(store: Database) -> dict[str, str | None]:
    """The store's (ingested) experiments, sorted, each with the time of its first
    event: what :func:`list_experiments` says of them, from ``experiments`` alone
    (without counting the events)."""
    return {e: first for e, (first, _) in event_spans(store).items()}


def event_spans(store: Database) -> dict[str, tuple[str | None, str | None]]:
    """The store's (ingested) experiments, sorted, each with the times of its first
    and last events (ISO): :func:`list_experiments`'s ``first_ts`` and ``last_ts``,
    from ``experiments`` alone, one statement that reads no event."""
    from sqlalchemy import text

    with store.connect() as conn:
        rows = conn.execute(text("SELECT experiment, first_ts, last_ts FROM experiments"))
        found = {str(e): (_iso(first), _iso(last)) for e, first, last in rows}
    return dict(sorted(found.items()))


def exposure_starts(store: Database) -> dict[str, str]:
    """Each ingested experiment's first exposure (ISO), where it logs exposures: the
    start of its analysis window (its first event may be of the pre-period)."""
    from sqlalchemy import text

    with store.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT experiment, MIN(ts) FROM events WHERE event_type = 'exposure' "
                "GROUP BY experiment"
            )
        ).fetchall()
    return {str(name): start for name, first in rows if (start := _iso(first)) is not None}


def experiment_rows(store: Database) -> tuple[tuple[str | None, ...], ...]:
    """Every row of ``experiments`` as text, sorted: what :func:`list_experiments`
    and :func:`exposure_starts` say is a function of them, since every ingest that
    adds events to an experiment rewrites its row (``updated_at``); one statement
    that reads no event."""
    from sqlalchemy import text

    with store.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT experiment, arms, control_arm, split, first_ts, last_ts, updated_at "
                "FROM experiments"
            )
        ).fetchall()
    return tuple(sorted(tuple(None if v is None else str(v) for v in r) for r in rows))


def summaries(conn: Connection, only: str | None = None) -> list[ExperimentSummary]:
    """The experiments ``events`` and ``experiments`` hold, on one connection."""
    from sqlalchemy import text

    where = "WHERE experiment = :e" if only else ""
    params = {"e": only} if only else {}
    settings = {
        r[0]: r[1:]
        for r in conn.execute(
            text(
                f"SELECT experiment, control_arm, split, first_ts, last_ts FROM experiments {where}"
            ),
            params,
        )
    }
    users = conn.execute(
        text(
            "SELECT experiment, arm, COUNT(DISTINCT user_id) "
            f"FROM events {where} GROUP BY experiment, arm"
        ),
        params,
    ).fetchall()
    counts = conn.execute(
        text(
            f"SELECT experiment, arm, event_type, COUNT(*) FROM events {where} "
            "GROUP BY experiment, arm, event_type"
        ),
        params,
    ).fetchall()
    several = {
        str(exp): int(n)
        for exp, n in conn.execute(
            text(
                "SELECT experiment, COUNT(*) FROM (SELECT experiment, user_id FROM events "
                f"{where} GROUP BY experiment, user_id HAVING COUNT(DISTINCT arm) > 1) x "
                "GROUP BY experiment"
            ),
            params,
        )
    }
    by_arm: dict[tuple[str, str], dict[str, int]] = {}
    for exp, arm, etype, n in counts:
        by_arm.setdefault((exp, arm), {})[etype] = int(n)
    # One pass over the arm rows, sorted once: each experiment takes its own.
    arms_of: dict[str, list[ArmSummary]] = {}
    for exp, arm, n in sorted(users):
        events = dict(sorted(by_arm.get((exp, arm), {}).items()))
        arms_of.setdefault(exp, []).append(ArmSummary(arm=arm, users=int(n), events=events))
    out = []
    for exp in sorted(settings):
        control, split, first, last = settings[exp]
        arms = arms_of.get(exp, [])
        out.append(
            ExperimentSummary(
                experiment=exp,
                arms=arms,
                first_ts=_iso(first),
                last_ts=_iso(last),
                users_in_several_arms=int(several.get(exp, 0)),
                control_arm=control,
                split=json.loads(split) if split else None,
            )
        )
    return out


def get_settings(conn: Connection, experiment: str) -> ExperimentSettings:
    """The experiment's arms and recorded settings; a clear error when it is unknown."""
    from sqlalchemy import text

    row = conn.execute(
        text(
            "SELECT arms, control_arm, split, window_from, window_to FROM experiments "
            "WHERE experiment = :e"
        ),
        {"e": experiment},
    ).fetchone()
    if row is None:
        known = experiment_names(conn)
        raise NotFoundError(unknown_experiment_message(experiment, known))
    arms = parse_arms(row[0])
    return ExperimentSettings(
        experiment=experiment,
        arms=arms,
        control_arm=row[1],
        split=json.loads(row[2]) if row[2] else None,
        window_from=row[3],
        window_to=row[4],
    )


def segment_attributes(conn: Connection, experiment: str) -> list[str]:
    """The attribute names (extra columns of the event files) the experiment's events
    carry, sorted: what ``--segment`` can break a report down by."""
    from sqlalchemy import text

    params = {"e": experiment}
    # The distinct attribute texts first: far fewer than the events to parse.
    distinct = (
        "(SELECT DISTINCT attributes AS a FROM events "
        "WHERE experiment = :e AND attributes IS NOT NULL) d"
    )
    sql = backend_of(conn).json_keys_sql(distinct)
    if sql is None:  # no such function: the keys of the distinct attribute objects
        rows = conn.execute(
            text("SELECT DISTINCT attributes FROM events WHERE experiment = :e"), params
        )
        keys = {k for (a,) in rows if a for k in json.loads(a)}
        return sorted(keys)
    return sorted(str(r[0]) for r in conn.execute(text(sql), params))


def unknown_segment_message(experiment: str, segment: str, known: list[str]) -> str:
    """The segment asked for names no attribute of the experiment: the known ones,
    and the closest as a did-you-mean (the caller names the option)."""
    if not known:
        return (
            f"experiment {experiment!r} has no event attributes to segment by; "
            "extra columns of the event files become attributes"
        )
    close = close_matches(segment, known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return (
        f"experiment {experiment!r} has no attribute {segment!r}; {hint}"
        f"known attributes: {', '.join(known)}"
    )


def unknown_arm_message(experiment: str, arm: str, arms: list[str]) -> str:
    """``experiment 'X' has no arm 'ctrl'; did you mean control? its arms are ...``"""
    close = close_matches(arm, arms, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"experiment {experiment!r} has no arm {arm!r}; {hint}its arms are {', '.join(arms)}"


def experiment_names(conn: Connection) -> list[str]:
    """The names of the experiments the store records, sorted."""
    from sqlalchemy import text

    return [str(r[0]) for r in conn.execute(text("SELECT experiment FROM experiments ORDER BY 1"))]


def unknown_experiment_message(experiment: str, known: list[str]) -> str:
    if not known:
        return (
            f"no experiment {experiment!r}: the store is empty; "
            "load events with `abeval ingest FILE`"
        )
    close = close_matches(experiment, known)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known[:10])}"
    return (
        f"no experiment {experiment!r} in the store; {hint} (list them with `abeval experiments`)"
    )


def _split_parts(text_value: str, arms: list[str]) -> list[str]:
    """``ARM=WEIGHT`` parts of a split: at the commas, except those inside an arm's
    name (``bert,v2=50,control=50`` has two parts when ``bert,v2`` is an arm)."""
    known = {a.strip() for a in arms}
    parts: list[str] = []
    held = ""
    for piece in text_value.split(","):
        held = f"{held},{piece}" if held else piece
        name, sep, _ = held.rpartition("=")
        if sep and (name.strip() in known or not any(a.startswith(held) for a in known)):
            parts.append(held)
            held = ""
    if held:
        parts.append(held)
    return parts


#: The smallest share of the users a recorded split may give an arm: below it the
#: expected count of the sample ratio check is no count at all.
MIN_SPLIT_SHARE = 1e-6


def parse_split(text_value: str, arms: list[str]) -> dict[str, float]:
    """``control=50,treatment=50`` → {arm: share}, checked against the arms."""
    split: dict[str, float] = {}
    for part in _split_parts(text_value, arms):
        name, sep, weight = part.rpartition("=")
        name = name.strip()
        try:
            value = float(weight)
        except ValueError:
            value = -1.0
        if not sep or not name or not math.isfinite(value) or value <= 0:
            raise OptionError(
                "split",
                text_value,
                "write it as ARM=WEIGHT,... with positive weights, such as control=50,treatment=50",
            )
        if name in split:
            raise OptionError("split", text_value, f"names the arm {name!r} twice")
        split[name] = value
    unknown = sorted(set(split) - set(arms))
    missing = sorted(set(arms) - set(split))
    if unknown or missing:
        raise OptionError(
            "split",
            text_value,
            f"does not match the arms {', '.join(arms)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
            + (f" (missing: {', '.join(missing)})" if missing else ""),
            allowed=arms,
        )
    top = max(split.values())
    scaled = {k: v / top for k, v in split.items()}  # 1e308s do not overflow the sum
    total = sum(scaled.values())
    shares = {k: v / total for k, v in scaled.items()}
    small = sorted(k for k, v in shares.items() if v < MIN_SPLIT_SHARE)
    if small:
        raise OptionError(
            "split",
            text_value,
            f"gives {', '.join(small)} less than one in a million of the users; the sample "
            "ratio check needs every arm's share at least 0.0001%",
        )
    return shares


@dataclass(frozen=True)
class TargetFile:
    """A target-probabilities file to record with an experiment: its name as
    given, its checked rows and its SHA-256."""

    path: str
    rows: Sequence[TargetRow]
    checksum: str


@dataclass(frozen=True)
class TargetsRecorded:
    """What recording a :class:`TargetFile` did: the check and the record."""

    check: TargetCheck
    recorded: RecordedTargets


def set_settings(
    store: Database,
    experiment: str,
    control: str | None,
    split: str | None,
    window_from: datetime | None = None,
    window_to: datetime | None = None,
    targets: TargetFile | None = None,
) -> ExperimentSettings:
    """Record the control arm, the expected split, the analysis window's bounds and
    the target's probabilities (each only when given; the probabilities checked and
    replacing those recorded before); the whole change or nothing (as
    ``experiment set`` records them: :func:`abeval.analysis.config_recording.record`)."""
    with store.writing() as conn:
        values = checked_change(conn, experiment, (control, split, window_from, window_to))[1]
        if targets is not None:
            record_targets(conn, experiment, targets)
        apply_change(conn, experiment, values)
        return get_settings(conn, experiment)


def checked_change(
    conn: Connection, experiment: str, settings: SettingsChange
) -> tuple[ExperimentSettings, dict[str, Any]]:
    """The experiment's current settings, and the columns of ``experiments`` the
    given ``settings`` change (column → new value), checked: an unknown arm, a split
    that does not match the arms, an empty window raise before anything is written."""
    control, split, window_from, window_to = settings
    current = get_settings(conn, experiment)
    if control is not None and control not in current.arms:
        raise NotFoundError(unknown_arm_message(experiment, control, current.arms))
    parsed = parse_split(split, current.arms) if split is not None else None
    start = window_from or current.window_from
    end = window_to or current.window_to
    if start is not None and end is not None and start >= end:
        raise AbevalError(
            f"the analysis window of {experiment!r} would be empty: from "
            f"{start.isoformat()} to {end.isoformat()}; {{window_from}} must come before "
            "{window_to}",
            parameters=("window_from", "window_to"),
        )
    values = {
        "control_arm": control,
        "split": json.dumps(parsed) if parsed else None,
        "window_from": window_from,
        "window_to": window_to,
    }
    return current, {k: v for k, v in values.items() if v is not None}


def record_targets(conn: Connection, experiment: str, targets: TargetFile) -> TargetsRecorded:
    """Check the target's probabilities against the experiment's arms and record them."""
    from abeval.store.ope_target import record_rows

    arms = get_settings(conn, experiment).arms
    found, recorded = record_rows(
        conn, experiment, arms, targets.rows, targets.path, targets.checksum
    )
    return TargetsRecorded(found, recorded)


def apply_change(conn: Connection, experiment: str, values: dict[str, Any]) -> None:
    """Set the columns of ``values`` (``None``: cleared) in the experiment's row."""
    if values:
        from abeval.store.backends import backend_of

        backend_of(conn).change_experiment_row(conn, experiment, values)


#: The columns ``experiment unset`` clears, by the option that names them.
CLEARED_COLUMNS = {
    "control": ("control_arm",),
    "split": ("split",),
    "window": ("window_from", "window_to"),
}


def cleared(names: Sequence[str]) -> dict[str, Any]:
    """The columns the recorded ``names`` (keys of :data:`CLEARED_COLUMNS`) are kept
    in, cleared (for :func:`apply_change`)."""
    return {c: None for n in names for c in CLEARED_COLUMNS.get(n, ())}


def get_config(conn: Connection, experiment: str) -> dict[str, Any]:
    """The experiment's saved configuration (``config``, a JSON object; empty when
    nothing is recorded or the experiment is not in ``experiments``)."""
    from sqlalchemy import text

    row = conn.execute(
        text("SELECT config FROM experiments WHERE experiment = :e"), {"e": experiment}
    ).fetchone()
    return dict(json.loads(row[0])) if row is not None and row[0] else {}


def config_column(config: dict[str, Any]) -> dict[str, Any]:
    """The saved configuration as the ``config`` column's new value (NULL when
    ``config`` is empty), for :func:`apply_change`."""
    return {"config": json.dumps(config, sort_keys=False) if config else None}
