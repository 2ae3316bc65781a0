"""One basis, everywhere: which interval the report shows for every metric.

The decision reads group-sequential intervals while no plan is recorded, the
always-valid ones with ``--sequential`` and the fixed-horizon ones once the
recorded plan is reached
(:func:`abeval.analysis.decision.decision_basis`, docs/metrics.md#decision). This
module makes the report's metrics, daily points and segments under that same
basis, once, so that no presenter chooses an interval: the decision, the verdicts,
the tables, the JSON and the API all read ``OnlineMetricResult.comparison``; the
over-time chart's last point (:func:`with_shown_end`) and the off-policy
section's online lift (:func:`with_shown_online`) are that same comparison.
While the basis is not the fixed horizon, each metric also carries the fixed-horizon
comparison as ``reference_fixed_horizon``, which presenters show only as a
reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from abeval.analysis.ope import OpeSection, agreement
from abeval.analysis.report_model import (
    DailyPoint,
    DecisionBasis,
    IntervalBasis,
    OnlineMetricResult,
    ReportOptions,
)
from abeval.stats.consistency import lift_difference
from abeval.stats.ope import Interval


def interval_basis(basis: DecisionBasis) -> IntervalBasis:
    """The interval a decision's ``basis`` reads: group-sequential (α spent over
    the daily looks) while no plan is recorded, always-valid with
    ``--sequential``, else fixed-horizon (a plan not yet reached is judged on
    fixed-horizon intervals once reached, and keeps running before)."""
    if basis == "sequential_requested":
        return "always_valid"
    if basis == "sequential_no_plan":
        return "group_sequential"
    return "fixed_horizon"


def basis_options(o: ReportOptions, basis: DecisionBasis) -> ReportOptions:
    """The options every shown comparison is made under: sequential exactly when
    the basis is always-valid (the group-sequential intervals widen the
    fixed-horizon comparisons, :func:`abeval.analysis.decision.judged_results`)."""
    return replace(o, sequential=interval_basis(basis) == "always_valid")


def shown_metrics(
    under_basis: Sequence[OnlineMetricResult],
    fixed: Sequence[OnlineMetricResult] | None,
    basis: DecisionBasis,
) -> list[OnlineMetricResult]:
    """The report's metrics: ``under_basis`` (made with :func:`basis_options`),
    each marked with its basis and, while the basis is not the fixed horizon, the
    fixed-horizon comparison of the same metric and arm from ``fixed`` as its
    reference."""
    kind = interval_basis(basis)
    reference = {(m.metric, m.arm): m.comparison for m in fixed or ()}
    return [
        replace(
            m,
            basis=kind,
            reference_fixed_horizon=reference.get((m.metric, m.arm))
            if kind != "fixed_horizon"
            else None,
        )
        for m in under_basis
    ]


def with_shown_end(
    daily: Sequence[DailyPoint],
    metrics: Sequence[OnlineMetricResult],
    look_day: int | None = None,
) -> tuple[DailyPoint, ...]:
    """The daily points with each series' last cumulative point replaced by its
    metric's shown lift and interval (CUPED where the tables use it, corrected
    once adjusted), so the chart ends where the tables and the decision stand;
    ``shown`` marks that point. A metric decided on an earlier day (its
    ``decided_day``, or every metric once a plan was reached at ``look_day``
    before today) is shown at that day's point instead: its numbers are that
    day's."""
    shown = {(m.metric, m.arm): m for m in metrics}
    first = min((date.fromisoformat(p.day[:10]) for p in daily), default=None)
    last: dict[tuple[str, str], int] = {}
    for i, p in enumerate(daily):
        m = shown.get((p.metric, p.arm))
        decided = None if m is None or first is None else (m.decided_day or look_day)
        number = None if first is None else (date.fromisoformat(p.day[:10]) - first).days + 1
        if decided is None or number == decided:
            last[p.metric, p.arm] = i
    out = list(daily)
    for key, i in last.items():
        m = shown.get(key)
        if m is not None:
            out[i] = replace(
                out[i], relative_lift=m.lift, ci=m.interval, status=m.comparison.status, shown=True
            )
    return tuple(out)


def with_shown_online(
    ope: OpeSection, metrics: Sequence[OnlineMetricResult], control: str
) -> OpeSection:
    """The off-policy section with each direction's online lift taken from the
    report's CTR under the basis: the treatment's CTR lift for a direction from
    control's logs to a treatment, the same comparison read the other way
    (1 / (1 + lift) − 1, its interval's ends inverted) for the reverse one. Its
    agreement and its difference from the predicted lift are judged against it; a
    direction between two treatments keeps its own online lift."""
    ctr = {m.arm: m for m in metrics if m.metric == "ctr" and m.comparison.status == "ok"}
    directions = []
    for d in ope.directions:
        online = None
        if d.source == control and d.target in ctr:
            online = _lift(ctr[d.target])
        elif d.target == control and d.source in ctr:
            online = _inverse(ctr[d.source])
        if online is None:
            directions.append(d)
            continue
        predicted = next(e for e in d.estimates if e.estimator == d.headline).predicted_lift
        directions.append(
            replace(
                d,
                online_lift=online,
                agreement=agreement(predicted, online),
                difference=lift_difference(
                    predicted.value, predicted.se, online.value, online.se, ope.alpha
                ),
            )
        )
    return replace(ope, directions=tuple(directions))


def _lift(m: OnlineMetricResult) -> Interval | None:
    rel = m.comparison.relative
    if m.lift is None or m.interval is None:
        return None
    return Interval(m.lift, rel.se, m.interval, "ok", "")


def _inverse(m: OnlineMetricResult) -> Interval | None:
    """The lift of control over the treatment: ``1 / (1 + lift) − 1``, its interval
    the ends inverted (defined while the interval stays above −100%), its standard
    error by the delta method."""
    rel = m.comparison.relative
    if m.lift is None or m.interval is None or min(m.interval) <= -1 or m.lift <= -1:
        return None
    low, high = m.interval
    se = None if rel.se is None else rel.se / (1 + m.lift) ** 2
    return Interval(1 / (1 + m.lift) - 1, se, (1 / (1 + high) - 1, 1 / (1 + low) - 1), "ok", "")
