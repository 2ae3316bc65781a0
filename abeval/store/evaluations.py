"""Offline evaluations recorded against an experiment (table ``offline_evaluations``,
migration 0003): what ``abeval evaluate --experiment X`` writes and what the
report and ``abeval agreement`` read back.

One :class:`RecordedEvaluation` is one run of ``evaluate``: the models are arms
of the experiment, and each (arm, metric) is one :class:`RecordedMetric`. The
baseline arm (the experiment's control) carries only its value; every other arm
also carries the paired difference against the baseline and its interval
(docs/metrics.md#comparing-models). The evaluation's id is a digest of its input
fingerprints, conventions and metric names (cutoffs included), so recording the
same evaluation again replaces it; :func:`latest_evaluations` gives, per
experiment, the one recorded last.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from abeval.store.migrate import has_own_table
from abeval.store.schema import TABLES
from abeval.store.store_keys import signature, signed_by

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

_COLUMNS = TABLES["offline_evaluations"].names


@dataclass(frozen=True)
class RecordedMetric:
    """One offline metric of one arm's model. ``se`` is the standard error of the
    mean over users (None for metrics over the whole list set, such as coverage);
    ``difference*`` (the paired mean difference against the baseline, its standard
    error and interval) are None on the baseline's own rows and when undefined."""

    arm: str
    metric: str
    value: float | None
    se: float | None
    users: int
    baseline_arm: str | None = None
    difference: float | None = None
    difference_se: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None
    paired_users: int | None = None


@dataclass(frozen=True)
class RecordedEvaluation:
    """One ``abeval evaluate`` run recorded against ``experiment`` (read back with its
    metrics ordered by arm, then metric)."""

    experiment: str
    recorded_at: datetime  # naive UTC
    conventions: Mapping[str, str]
    fingerprints: Mapping[str, str]  # input role or model name -> sha256 of the file
    metrics: tuple[RecordedMetric, ...]

    @property
    def evaluation_id(self) -> str:
        """A digest of the experiment, the inputs, the conventions and the metrics
        recorded (their names carry the cutoffs: ``ndcg@10``), so that the same
        files evaluated with other ``--k`` or ``-m`` are another evaluation."""
        key = json.dumps(
            [
                self.experiment,
                sorted(self.fingerprints.items()),
                sorted(self.conventions.items()),
                sorted({m.metric for m in self.metrics}),
            ]
        )
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    @property
    def arms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.arm for m in self.metrics))

    def metric(self, arm: str, name: str) -> RecordedMetric | None:
        for m in self.metrics:
            if m.arm == arm and m.metric == name:
                return m
        return None


def record_evaluation(store: Database, evaluation: RecordedEvaluation) -> str:
    """Write ``evaluation`` in one transaction (replacing an earlier recording of
    the same inputs); returns its id."""
    eid = evaluation.evaluation_id
    shared = {
        "evaluation_id": eid,
        "experiment": evaluation.experiment,
        "conventions": json.dumps(dict(evaluation.conventions), sort_keys=True),
        "fingerprints": json.dumps(dict(evaluation.fingerprints), sort_keys=True),
        "recorded_at": evaluation.recorded_at,
    }
    rows = [{**shared, **_metric_row(m)} for m in evaluation.metrics]
    store.backend.write_own_rows(store, "offline_evaluations", "evaluation_id", [eid], rows)
    return eid


def _metric_row(m: RecordedMetric) -> dict[str, Any]:
    return {
        "arm": m.arm,
        "metric": m.metric,
        "value": m.value,
        "se": m.se,
        "users": m.users,
        "baseline_arm": m.baseline_arm,
        "difference": m.difference,
        "difference_se": m.difference_se,
        "difference_low": m.difference_low,
        "difference_high": m.difference_high,
        "paired_users": m.paired_users,
    }


#: The ``kind`` of a kept evaluation's file (:func:`evaluation_document`).
KEPT_KIND = "abeval.recorded_evaluation"


def evaluation_document(evaluation: RecordedEvaluation, key: bytes) -> dict[str, Any]:
    """``evaluation`` as a JSON document: what :func:`record_evaluation` writes, kept
    in a file when it could not be written, to be recorded later as it is. It is
    signed with the store's key (:mod:`abeval.store.store_keys`), so that an edited
    file cannot be made to pass by recomputing a digest."""
    doc = {
        "kind": KEPT_KIND,
        "evaluation_id": evaluation.evaluation_id,
        "experiment": evaluation.experiment,
        "recorded_at": evaluation.recorded_at.isoformat(),
        "conventions": dict(evaluation.conventions),
        "fingerprints": dict(evaluation.fingerprints),
        "metrics": [_metric_row(m) for m in evaluation.metrics],
    }
    return {**doc, "signature": signature(key, _signed_text(doc))}


def _signed_text(doc: Mapping[str, Any]) -> bytes:
    """The document's canonical JSON, its signature left out: what is signed."""
    body = {k: v for k, v in doc.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, allow_nan=True).encode()


def evaluation_from_document(doc: Any, key: bytes | None) -> RecordedEvaluation:
    """The evaluation :func:`evaluation_document` wrote with ``key``; ValueError naming
    what is wrong for a document that is not one, or was edited (its signature no
    longer matches), or was kept for another store (signed with another key; None:
    the store has no key, so it kept no evaluation)."""
    if not isinstance(doc, dict) or doc.get("kind") != KEPT_KIND:
        raise ValueError("not an evaluation kept by abeval evaluate --experiment")
    if key is None:
        raise ValueError(
            "this store never kept an evaluation, so its signature cannot be checked "
            "(kept for another store?)"
        )
    if not signed_by(key, _signed_text(doc), doc.get("signature")):
        raise ValueError(
            "its contents do not match its signature (the file was edited, or kept for "
            "another store)"
        )
    try:
        evaluation = RecordedEvaluation(
            experiment=str(doc["experiment"]),
            recorded_at=datetime.fromisoformat(doc["recorded_at"]),
            conventions={str(k): str(v) for k, v in doc["conventions"].items()},
            fingerprints={str(k): str(v) for k, v in doc["fingerprints"].items()},
            metrics=tuple(_metric_of(_Row(m)) for m in doc["metrics"]),
        )
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as exc:
        raise ValueError(f"not a complete kept evaluation ({type(exc).__name__}: {exc})") from None
    if evaluation.evaluation_id != doc.get("evaluation_id"):
        raise ValueError("its id does not match its contents (the file was edited)")
    return evaluation


#: The most users a recorded row may claim (a BIGINT holds more; no table has as many).
MAX_USERS = 10**15
#: How far in the future a kept evaluation's time may be (clocks differ a little).
CLOCK_SKEW = timedelta(minutes=5)


def check_evaluation(
    evaluation: RecordedEvaluation, arms: Sequence[str], now: datetime
) -> str | None:
    """What makes ``evaluation`` unfit to record against an experiment with ``arms``
    at ``now`` (naive UTC): an arm it does not have, a value that is not finite or
    out of range, a row twice, a time in the future; None when nothing does."""
    if evaluation.recorded_at.tzinfo is not None:
        return f"recorded_at {evaluation.recorded_at.isoformat()} carries a time zone"
    if evaluation.recorded_at > now + CLOCK_SKEW:
        return (
            f"recorded_at {evaluation.recorded_at.isoformat()} is in the future (now "
            f"{now.isoformat(timespec='seconds')} UTC)"
        )
    if not evaluation.metrics:
        return "it has no metrics"
    seen: set[tuple[str, str]] = set()
    for m in evaluation.metrics:
        where = f"arm {m.arm!r}, metric {m.metric!r}"
        for arm in (m.arm, m.baseline_arm):
            if arm is not None and arm not in arms:
                return (
                    f"{where}: {arm!r} is not an arm of experiment {evaluation.experiment!r} "
                    f"(its arms: {', '.join(arms)})"
                )
        if (m.arm, m.metric) in seen:
            return f"{where}: recorded twice"
        seen.add((m.arm, m.metric))
        for name in ("users", "paired_users"):
            count = getattr(m, name)
            if count is not None and not 0 <= count <= MAX_USERS:
                return f"{where}: {name} {count} is outside 0 to {MAX_USERS:.0e}"
        for name in ("value", "se", "difference", "difference_se"):
            x = getattr(m, name)
            if x is not None and not math.isfinite(x):
                return f"{where}: {name} {x} is not a finite number"
        for name in ("se", "difference_se"):
            x = getattr(m, name)
            if x is not None and x < 0:
                return f"{where}: {name} {x} is negative"
        low, high = m.difference_low, m.difference_high
        if (low is None) != (high is None) or (
            low is not None
            and high is not None
            and not (math.isfinite(low) and math.isfinite(high) and low <= high)
        ):
            return f"{where}: the interval {low} to {high} is not one"
    return None


class _Row:
    """A kept metric's mapping read as a result row (``row.arm``)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        return self._values[name]


def latest_evaluations(
    store: Database, experiments: Sequence[str] | None = None
) -> dict[str, RecordedEvaluation]:
    """Per experiment (all, or those named), the evaluation recorded last."""
    from sqlalchemy import text

    where, params = "", {}
    if experiments is not None:
        names = list(experiments)
        if not names:
            return {}
        where = "WHERE experiment IN (" + ", ".join(f":x{i}" for i in range(len(names))) + ")"
        params = {f"x{i}": n for i, n in enumerate(names)}
    with store.connect() as conn:
        if not has_own_table(conn, "offline_evaluations"):
            return {}
        rows = conn.execute(
            text(
                f"SELECT {', '.join(_COLUMNS)} FROM offline_evaluations {where} "
                "ORDER BY experiment, recorded_at, evaluation_id, arm, metric"
            ),
            params,
        ).fetchall()
    grouped: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        grouped.setdefault((row.experiment, row.evaluation_id), []).append(row)
    latest: dict[str, RecordedEvaluation] = {}
    for (experiment, _), group in grouped.items():
        first = group[0]
        candidate = RecordedEvaluation(
            experiment=experiment,
            recorded_at=first.recorded_at,
            conventions=json.loads(first.conventions),
            fingerprints=json.loads(first.fingerprints),
            metrics=tuple(_metric_of(r) for r in group),
        )
        kept = latest.get(experiment)
        if kept is None or candidate.recorded_at >= kept.recorded_at:
            latest[experiment] = candidate
    return latest


def _metric_of(row: Any) -> RecordedMetric:
    def opt_float(v: Any) -> float | None:
        return None if v is None else float(v)

    return RecordedMetric(
        arm=row.arm,
        metric=row.metric,
        value=opt_float(row.value),
        se=opt_float(row.se),
        users=int(row.users),
        baseline_arm=row.baseline_arm,
        difference=opt_float(row.difference),
        difference_se=opt_float(row.difference_se),
        difference_low=opt_float(row.difference_low),
        difference_high=opt_float(row.difference_high),
        paired_users=None if row.paired_users is None else int(row.paired_users),
    )


@dataclass(frozen=True)
class EvaluationListed:
    """One evaluation recorded against an experiment, as ``experiment show`` lists
    it: its id, when (naive UTC), its arms and its metrics."""

    evaluation_id: str
    recorded_at: datetime
    arms: tuple[str, ...]
    metrics: tuple[str, ...]


def listed_evaluations(conn: Connection, experiment: str) -> tuple[EvaluationListed, ...]:
    """Every evaluation recorded against ``experiment``, the earliest first."""
    from sqlalchemy import text

    if not has_own_table(conn, "offline_evaluations"):
        return ()
    rows = conn.execute(
        text(
            "SELECT evaluation_id, recorded_at, arm, metric FROM offline_evaluations "
            "WHERE experiment = :e ORDER BY recorded_at, evaluation_id, arm, metric"
        ),
        {"e": experiment},
    ).fetchall()
    grouped: dict[str, list[Any]] = {}
    for row in rows:
        grouped.setdefault(str(row[0]), []).append(row)
    return tuple(
        EvaluationListed(
            evaluation_id=eid,
            recorded_at=group[0][1],
            arms=tuple(dict.fromkeys(str(r[2]) for r in group)),
            metrics=tuple(dict.fromkeys(str(r[3]) for r in group)),
        )
        for eid, group in grouped.items()
    )
