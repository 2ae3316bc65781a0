"""The report's predicted lifts: what the offline evaluation recorded before the test
predicted for each treatment arm, beside the online lift it had
(docs/metrics.md#recorded-evaluations).

The experiment's latest recorded evaluation
(:func:`abeval.store.evaluations.latest_evaluations`) gives, per offline metric with
a paired difference and per treatment arm, the relative lift of the arm's model
over the control's (:func:`abeval.analysis.recorded_lift.recorded_lift`).
Each is set beside the online relative lift of every primary metric, with the
interval the report shows for it (multiplicity-corrected), and judged with the
rule of the off-policy estimates (:func:`abeval.analysis.ope.agreement`): a recorded
evaluation was computed from held-out files before the test, not from the test's
clicks, so unlike the replayed metrics it is independent evidence. Both lifts are
judged in the direction of "better" (a lift of a metric where lower is better
counts the other way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from abeval.analysis.ope import agreement
from abeval.analysis.recorded_lift import recorded_lift
from abeval.metrics.registry import offline_lower_is_better
from abeval.stats.ope import Interval
from abeval.stats.results import JsonResult
from abeval.store.evaluations import RecordedEvaluation, latest_evaluations

if TYPE_CHECKING:
    from abeval.analysis.report_model import OnlineMetricResult
    from abeval.store.database import Database

PredictedStatus = Literal["ok", "none_recorded", "other_baseline"]


@dataclass(frozen=True)
class PredictedLift(JsonResult):
    """One offline metric's predicted lift for one treatment arm, beside one primary
    online metric's lift in the test."""

    metric: str  # the offline metric (``ndcg@10``)
    arm: str
    control_value: float | None  # the control model's value of ``metric``
    arm_value: float | None  # the arm's model's value
    paired_users: int | None
    predicted: Interval  # relative lift, recorded before the test
    online_metric: str
    online_label: str
    online: Interval  # relative lift in the test, the interval the report shows
    agreement: str  # "agree", "disagree", "inconclusive"


@dataclass(frozen=True)
class PredictedSection(JsonResult):
    """The recorded evaluation the report sets beside the online lifts: its id,
    when it was recorded, the control arm whose model is the baseline, its
    conventions and input fingerprints, one :class:`PredictedLift` per (offline
    metric, treatment arm, primary metric), the metrics recorded without a paired
    difference (values only, no lift) and the warnings."""

    status: PredictedStatus
    message: str
    evaluation_id: str | None = None
    recorded_at: str | None = None
    baseline: str | None = None
    conventions: dict[str, str] | None = None
    fingerprints: dict[str, str] | None = None
    lifts: tuple[PredictedLift, ...] = ()
    values_only: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def predicted_results(
    store: Database,
    experiment: str,
    control: str,
    treatments: Sequence[str],
    metrics: Sequence[OnlineMetricResult],
) -> PredictedSection:
    """The section for ``experiment`` from its latest recorded evaluation, against
    the report's primary ``metrics`` (module docstring)."""
    evaluation = latest_evaluations(store, [experiment]).get(experiment)
    if evaluation is None:
        return PredictedSection(
            "none_recorded",
            "no offline evaluation is recorded for this experiment",
        )
    return predicted_section(evaluation, control, treatments, metrics)


def predicted_section(
    evaluation: RecordedEvaluation,
    control: str,
    treatments: Sequence[str],
    metrics: Sequence[OnlineMetricResult],
) -> PredictedSection:
    """:func:`predicted_results` once the evaluation is read."""
    baselines = {m.baseline_arm for m in evaluation.metrics if m.baseline_arm}
    base = next(iter(baselines), control)
    head: dict[str, Any] = {
        "evaluation_id": evaluation.evaluation_id,
        "recorded_at": evaluation.recorded_at.isoformat(timespec="seconds"),
        "baseline": base,
        "conventions": dict(evaluation.conventions),
        "fingerprints": dict(evaluation.fingerprints),
    }
    if base != control:
        return PredictedSection(
            "other_baseline",
            f"the recorded evaluation's lifts are against {base!r}, this report's control is "
            f"{control!r}: not comparable",
            **head,
        )
    paired = list(dict.fromkeys(m.metric for m in evaluation.metrics if m.baseline_arm))
    values_only = tuple(
        dict.fromkeys(m.metric for m in evaluation.metrics if m.metric not in paired)
    )
    primaries = [m for m in metrics if m.role == "primary"]
    lifts: list[PredictedLift] = []
    warnings: list[str] = []
    for arm in treatments:
        if arm not in evaluation.arms:
            warnings.append(f"{arm}: no model of this arm was evaluated")
            continue
        for name in paired:
            lifts += _lifts(evaluation, name, arm, control, [m for m in primaries if m.arm == arm])
    return PredictedSection(
        "ok", "", **head, lifts=tuple(lifts), values_only=values_only, warnings=tuple(warnings)
    )


def _lifts(
    evaluation: RecordedEvaluation,
    metric: str,
    arm: str,
    control: str,
    online: Sequence[OnlineMetricResult],
) -> list[PredictedLift]:
    """One offline metric of one arm against each primary online metric of that arm."""
    predicted = recorded_lift(evaluation, arm, metric)
    row = evaluation.metric(arm, metric)
    if predicted is None or row is None:
        return []
    base = evaluation.metric(control, metric)
    offline_better = _better(predicted, offline_lower_is_better(metric))
    out = []
    for m in online:
        lift = _online(m)
        out.append(
            PredictedLift(
                metric=metric,
                arm=arm,
                control_value=base.value if base else None,
                arm_value=row.value,
                paired_users=row.paired_users,
                predicted=predicted,
                online_metric=m.metric,
                online_label=m.label,
                online=lift,
                agreement=agreement(offline_better, _better(lift, m.lower_is_better)),
            )
        )
    return out


def _online(m: OnlineMetricResult) -> Interval:
    """The report's relative lift of ``m`` with the interval it shows (corrected)."""
    rel = m.comparison.relative
    if m.status != "ok" or rel.effect is None:
        return Interval(None, None, None, "no_data", m.message or m.status)
    if rel.interval is None:
        return Interval(rel.effect, rel.se, None, "ok", "no bounded interval")
    return Interval(rel.effect, rel.se, rel.interval, "ok", "")


def _better(x: Interval, lower_is_better: bool) -> Interval:
    """``x`` with "better" positive: negated when lower is better."""
    if not lower_is_better or x.ci is None:
        return x
    value = None if x.value is None else -x.value
    return Interval(value, x.se, (-x.ci[1], -x.ci[0]), x.status, x.message)
