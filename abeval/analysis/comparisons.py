"""The report's online comparisons: each metric, each treatment arm against control.

From the per-arm :class:`~abeval.store.sql.online_variables.Moments` the store returns,
this module makes every comparison the report shows: the main one (with CUPED
when the pre-period helps, the unadjusted one beside it), the Bayesian view,
multiple-testing correction within each family (primary, guardrail, secondary),
and the same tests per day and per segment. The maths is in :mod:`abeval.stats`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from abeval.analysis.online_metrics import (
    Catalog,
    OnlineMetric,
    arm_stats,
    direction,
    has_pre_period,
    numerator,
)
from abeval.analysis.report_model import (
    ArmValue,
    DailyPoint,
    OnlineMetricResult,
    ReportOptions,
    Role,
    SegmentResult,
)
from abeval.analysis.team_metrics import failed_reason, no_events
from abeval.stats import Comparison, Lift, adjust_comparisons, compare, compare_bayesian
from abeval.stats.sufficient import ArmStats
from abeval.store.sql.online_variables import Moments

MANY_SLICES = 10

# The information fractions of each result's group-sequential looks.
Looks = Callable[[OnlineMetricResult], tuple[float, ...]]

# The statistics of each (metric, treatment arm)'s main comparison (CUPED when it
# applied): control's, treatment's; what the power section plans from.
PlainStats = dict[tuple[str, str], tuple[ArmStats, ArmStats]]


def role(name: str, o: ReportOptions) -> Role:
    """A metric's role in the report: primary, guardrail or secondary."""
    if name in o.primary:
        return "primary"
    if name in o.guardrails:
        return "guardrail"
    return "secondary"


def shown(name: str, o: ReportOptions) -> bool:
    """Whether the report compares ``name``: every metric, unless secondary metrics
    were chosen (then the primary metrics, the guardrails and those)."""
    return o.secondary is None or role(name, o) != "secondary" or name in o.secondary


def arm_value(metric: OnlineMetric, m: Moments) -> ArmValue:
    """One arm's value of ``metric``, with its numerator and denominator."""
    num = m.sums[numerator(metric, m)]
    den = m.sums[metric.denominator] if metric.denominator else float(m.n)
    return ArmValue(value=num / den if den else None, numerator=num, denominator=den, users=m.n)


def compare_arms(
    metric: OnlineMetric, c: Moments, t: Moments, o: ReportOptions, cuped: bool = False
) -> tuple[Comparison, ArmStats, ArmStats]:
    """One metric, control moments ``c`` against treatment ``t``, tested the way the
    report's options say (fixed or sequential); returns the statistics used too."""
    sc, st = arm_stats(metric, c, cuped), arm_stats(metric, t, cuped)
    result = compare(
        sc,
        st,
        alpha=o.alpha,
        sequential=o.sequential,
        tuning_n=o.tuning_n,
        relative_interval=o.relative_interval,
        nonnegative=True,  # every online metric is a count, a sum of revenue or a ratio of them
    )
    return result, sc, st


def compare_metric(
    metric: OnlineMetric, c: Moments, t: Moments, o: ReportOptions
) -> tuple[Comparison, Comparison | None, ArmStats, ArmStats]:
    """Main comparison (CUPED when the pre-period helps), the unadjusted one beside
    it when CUPED was used, and the statistics the main comparison used."""
    plain, plain_c, plain_t = compare_arms(metric, c, t, o)
    if o.cuped_days > 0 and has_pre_period(c, metric) and has_pre_period(t, metric):
        adj, cuped_c, cuped_t = compare_arms(metric, c, t, o, cuped=True)
        if adj.status == "ok" and adj.cuped:
            return adj, plain, cuped_c, cuped_t
    return plain, None, plain_c, plain_t


def metric_results(
    moments: dict[str, Moments],
    control: str,
    treatments: list[str],
    o: ReportOptions,
    catalog: Catalog,
    looks: Looks | None = None,
) -> tuple[list[OnlineMetricResult], PlainStats]:
    """Every online metric of the store's ``catalog`` for every treatment arm,
    corrected within its family (over the group-sequential ``looks`` of each
    result when given: :func:`abeval.stats.adjust_comparisons`); and the
    statistics of each pair's main comparison (for the power section)."""
    results: list[OnlineMetricResult] = []
    plain: PlainStats = {}
    learned = {p.metric: p.normal() for p in o.priors}
    for name, metric in catalog.metrics.items():
        if not shown(name, o):
            continue
        waiting = no_events(name, catalog)
        failed = failed_reason(name, catalog)
        for arm in treatments:
            c, t = moments[control], moments[arm]
            main, unadjusted, used_c, used_t = compare_metric(metric, c, t, o)
            if failed:
                none = Lift(None)
                main = replace(main, status="failed", message=failed, absolute=none, relative=none)
                unadjusted = None
            plain[(name, arm)] = (used_c, used_t)
            bayes = compare_bayesian(
                used_c,
                used_t,
                alpha=o.alpha,
                prior=learned.get(name),
                lower_is_better=metric.lower_is_better,
                relative_interval=o.relative_interval,
            )
            results.append(
                OnlineMetricResult(
                    metric=name,
                    label=metric.label,
                    kind=metric.kind,
                    role=role(name, o),
                    arm=arm,
                    control=_unknown(c) if failed else arm_value(metric, c),
                    treatment=_unknown(t) if failed else arm_value(metric, t),
                    comparison=main,
                    unadjusted=unadjusted,
                    bayesian=bayes,
                    significant=False,
                    status="no_events" if waiting else main.status,
                    message=waiting or main.message,
                )
            )
    return adjust_families(results, o, looks), plain


def _unknown(m: Moments) -> ArmValue:
    """A failed metric's arm: its users, no value."""
    return ArmValue(value=None, numerator=0.0, denominator=0.0, users=m.n)


def adjust_families(
    results: list[OnlineMetricResult], o: ReportOptions, looks: Looks | None = None
) -> list[OnlineMetricResult]:
    """Multiple-testing correction within each role: the primary metrics × treatment
    arms are one family; guardrails and secondary metrics are families of their own."""
    out = list(results)
    for family in ("primary", "guardrail", "secondary"):
        idx = [i for i, r in enumerate(out) if r.role == family]
        if not idx:
            continue
        adjusted = adjust_comparisons(
            [out[i].comparison for i in idx],
            o.correction,  # type: ignore[arg-type]
            looks=None if looks is None else [looks(out[i]) for i in idx],
        )
        for i, comp in zip(idx, adjusted, strict=True):
            out[i] = replace(out[i], comparison=comp, significant=direction(comp) != 0)
    return out


def daily_points(
    daily: list[tuple[str, dict[str, Moments]]],
    own_days: list[tuple[str, dict[str, Moments]]],
    control: str,
    treatments: list[str],
    o: ReportOptions,
    catalog: Catalog,
) -> tuple[DailyPoint, ...]:
    """The primary metrics' relative lift at the end of each day: cumulative (all
    activity so far) and of that day's activity alone, each day on its own."""
    own = dict(own_days)
    points = []
    for day, by_arm in daily:
        if control not in by_arm:
            continue
        today = own.get(day, {})
        for name in o.primary:
            metric = catalog[name]
            for arm in treatments:
                if arm not in by_arm:
                    continue
                comp = compare_arms(metric, by_arm[control], by_arm[arm], o)[0]
                alone = (
                    compare_arms(metric, today[control], today[arm], o)[0]
                    if control in today and arm in today
                    else None
                )
                points.append(
                    DailyPoint(
                        day=day,
                        metric=name,
                        arm=arm,
                        control_users=by_arm[control].n,
                        treatment_users=by_arm[arm].n,
                        relative_lift=comp.relative.effect,
                        ci=comp.relative.ci,
                        status=comp.status,
                        day_lift=alone.relative.effect if alone else None,
                        day_ci=alone.relative.ci if alone else None,
                        day_status=alone.status if alone else "empty_arm",
                    )
                )
    return tuple(points)


def segment_results(
    seg: dict[str, dict[str, Moments]], control: str, o: ReportOptions, catalog: Catalog
) -> tuple[tuple[SegmentResult, ...], str | None]:
    """The primary metrics per segment value, corrected over all the slices; and a
    warning when there are many of them."""
    if not seg:
        return (), None
    rows: list[SegmentResult] = []
    for value, by_arm in sorted(seg.items()):
        if control not in by_arm:
            continue
        for name in o.primary:
            metric = catalog[name]
            for arm in sorted(a for a in by_arm if a != control):
                comp = compare_arms(metric, by_arm[control], by_arm[arm], o)[0]
                rows.append(
                    SegmentResult(
                        segment=o.segment or "",
                        value=value,
                        metric=name,
                        arm=arm,
                        control_users=by_arm[control].n,
                        treatment_users=by_arm[arm].n,
                        comparison=comp,
                    )
                )
    adjusted = adjust_comparisons([r.comparison for r in rows], o.correction)  # type: ignore[arg-type]
    rows = [replace(r, comparison=c) for r, c in zip(rows, adjusted, strict=True)]
    warning = None
    if len(rows) > MANY_SLICES:
        warning = (
            f"{len(rows)} segment comparisons: without correction about "
            f"{len(rows) * o.alpha:.1f} would look significant by chance; the p-values and "
            f"intervals are {o.correction}-corrected over all of them. Treat segment "
            "differences as hypotheses for a new test."
        )
    return tuple(rows), warning
