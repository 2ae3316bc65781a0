"""``abeval metrics add`` and ``abeval metrics``: a metrics file checked against the
store and recorded whole, and every metric (built-in and recorded) with its
definition (docs/metrics.md#team-defined-metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.analysis.metric_file import read_metric_file, unseen_events
from abeval.analysis.online_metrics import BUILTIN_METRICS
from abeval.analysis.team_metrics import TeamMetric, UnreadableDefinition, unreadable

if TYPE_CHECKING:
    from abeval.store.database import Database
    from abeval.store.metric_definitions import RecordedDefinition


@dataclass(frozen=True)
class Added:
    """What ``metrics add`` recorded: the metrics, which of them replaced a
    definition recorded before, and a warning line per event type a metric reads
    that no ingested row has yet (recorded all the same: the report says so until
    the events arrive)."""

    metrics: tuple[TeamMetric, ...]
    replaced: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricRow:
    """One metric as ``abeval metrics`` lists it."""

    name: str
    kind: str
    builtin: bool
    label: str
    definition: str
    description: str
    lower_is_better: bool
    recorded: TeamMetric | None = None
    source: str | None = None
    recorded_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "builtin": self.builtin,
            "label": self.label,
            "definition": self.definition,
            "description": self.description,
            "lower_is_better": self.lower_is_better,
        }
        if self.recorded is not None:
            out["recorded"] = self.recorded.to_json()
            out["source"] = self.source
            out["recorded_at"] = self.recorded_at.isoformat() if self.recorded_at else None
        return out


def add_metrics(store: Database, path: Path) -> Added:
    """Read ``path``, check every definition, and record them all in one
    transaction (nothing when any is wrong); an event type not ingested yet is a
    warning, not a mistake."""
    from abeval.store import metric_definitions as stored

    with store.connect() as conn:
        types = stored.event_types(conn)
        before = {r.name for r in stored.load(conn)}
    metrics = read_metric_file(path)
    stored.save(store, {m.name: m.to_json() for m in metrics}, path.name)
    replaced = tuple(m.name for m in metrics if m.name in before)
    return Added(metrics, replaced, unseen_events(metrics, types))


def remove_metric(store: Database, name: str) -> MetricRow:
    """Forget the team-defined metric ``name`` (a built-in one cannot be); the
    metric as it was recorded."""
    from abeval.errors import InputError, NotFoundError, did_you_mean
    from abeval.store import metric_definitions as stored

    if name in BUILTIN_METRICS:
        raise InputError(f"{name!r} is a built-in metric; only a recorded metric can be removed")
    removed = stored.remove(store, name)
    if removed is None:
        with store.connect() as conn:
            known = stored.names(stored.load(conn))
        raise NotFoundError(
            f"no recorded metric {name!r}; {did_you_mean(name, known)}"
            "list them with `abeval metrics`"
        )
    return _row(removed)


def list_metrics(store: Database) -> tuple[MetricRow, ...]:
    """The built-in metrics, then the recorded ones by name."""
    from abeval.store.metric_definitions import recorded

    rows = [
        MetricRow(m.name, m.kind, True, m.label, m.description, "", m.lower_is_better)
        for m in BUILTIN_METRICS.values()
    ]
    rows += [_row(r) for r in recorded(store)]
    return tuple(rows)


def _row(r: RecordedDefinition) -> MetricRow:
    """The recorded metric's row; one of kind ``failed`` whose definition is the
    reason it cannot be read, with the fix, when it cannot."""
    try:
        m = TeamMetric.from_json(r.name, r.definition)
    except UnreadableDefinition as exc:
        why = unreadable(r.name, str(exc))
        return MetricRow(
            r.name, "failed", False, r.name, why, "", False, None, r.source, r.recorded_at
        )
    return MetricRow(
        m.name,
        m.kind,
        False,
        m.name,
        m.formula(),
        m.description,
        m.lower_is_better,
        m,
        r.source,
        r.recorded_at,
    )
