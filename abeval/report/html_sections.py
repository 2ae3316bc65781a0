"""The sections of the experiment report page, one builder each.

Each function turns part of an :class:`~abeval.analysis.report_model.ExperimentReport`
into the rows of one section of :class:`~abeval.report.html_context.ReportContext`:
the health checks, the metric tables, the charts over time, power, the offline
replay, the segment breakdown and the sufficient statistics. They take
presentation decisions only (which interval is drawn, which colour, where a bar
falls); every number comes from the report. The interval shown is always
:attr:`Lift.interval <abeval.stats.results.Lift.interval>`, the
multiplicity-corrected one where the report has it.
"""

from __future__ import annotations

from collections.abc import Sequence

from abeval.analysis.online_metrics import Catalog, direction
from abeval.analysis.report_model import CapInfo, ExperimentReport, OnlineMetricResult, Role
from abeval.formatting import (
    count,
    fixed,
    number,
    parse_time,
    pvalue,
    share,
    signed,
    unbounded_notes,
    when,
)
from abeval.report.charts import (
    DayLift,
    IntervalBar,
    LiftChart,
    Tick,
    UsersChart,
    bar_axis,
    bar_scale,
    interval_bar,
    lift_chart,
    users_chart,
)
from abeval.report.decision_text import looks_text
from abeval.report.html_context import (
    CheckState,
    HealthCheck,
    MetricTable,
    OfflineRow,
    OfflineTable,
    OnlineMetricRow,
    PowerLine,
    SegmentRow,
    SegmentTable,
    StatisticsTable,
)
from abeval.report.method_text import decided_words, reference_words
from abeval.report.offline_view import offline_view, significant
from abeval.report.tones import offline_lower_is_better, tone
from abeval.report.words import capping_bias, said
from abeval.stats.results import Lift

# --------------------------------------------------------------------------- names


def metric_label(report: ExperimentReport, metric: str) -> str:
    """The label of an online metric as the report shows it (its name when unknown)."""
    for m in report.metrics:
        if m.metric == metric:
            return m.label
    return report.catalog.label(metric)


def p_equals(p: float | None) -> str:
    """``p = 0.0123``, or ``p <0.0001`` below the smallest printed p-value."""
    text = pvalue(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


# --------------------------------------------------------------------------- health


def freshness(report: ExperimentReport) -> str:
    """How long before the report the last event happened, in words ("" if unknown)."""
    last, generated = parse_time(report.health.last_ts), parse_time(report.generated_at)
    if last is None or generated is None:
        return ""
    hours = (generated - last).total_seconds() / 3600
    if hours < 0:
        return ""
    if hours < 48:
        return f"{hours:.0f} hours"
    return f"{hours / 24:.0f} days"


def _sample_ratio_check(report: ExperimentReport) -> HealthCheck:
    """The sample ratio row. With status ``ok`` the test has an expected count
    for every arm of ``report.arms`` (both come from the same list of arms)."""
    srm = report.health.srm
    if srm.status != "ok" or srm.expected is None:
        if srm.flagged:
            return HealthCheck("Sample ratio", "fail", "FAIL", said(srm.status, srm.message))
        return HealthCheck("Sample ratio", "info", "n/a", said(srm.status, srm.message))
    parts = [
        f"{a.arm} {count(a.users)} (expected {count(round(e))}, {share(a.expected_share)})"
        for a, e in zip(report.arms, srm.expected, strict=True)
    ]
    detail = (
        "; ".join(parts)
        + f". χ² = {fixed(srm.statistic, 2)}, {p_equals(srm.p_value)}; "
        + f"flagged when p < {srm.threshold:g}."
    )
    state: CheckState = "fail" if srm.flagged else "pass"
    return HealthCheck("Sample ratio", state, "FAIL" if srm.flagged else "pass", detail)


def health_checks(report: ExperimentReport, fresh: str) -> tuple[HealthCheck, ...]:
    """The rows of the health table; ``fresh`` is :func:`freshness` of the report."""
    h = report.health
    several = h.users_in_several_arms
    integrity = {
        "clicks without an impression": h.clicks_without_impression,
        "purchases without a click": h.purchases_without_click,
        "duplicate impressions": h.duplicate_impressions,
    }
    bad_integrity = any(integrity.values())
    span = (
        f"events from {when(h.first_ts)} to {when(h.last_ts)}"
        if parse_time(h.first_ts) and parse_time(h.last_ts)
        else "no events"
    )
    return (
        _sample_ratio_check(report),
        *_window_and_cap_checks(report),
        HealthCheck(
            "Users in several arms",
            "warn" if several else "pass",
            "check" if several else "pass",
            (
                f"{count(several)} users were seen in more than one arm and are left out."
                if several
                else "No user was seen in more than one arm."
            )
            + f" {count(h.users_analysed)} of {count(h.users_seen)} users analysed.",
        ),
        HealthCheck(
            "Event integrity",
            "warn" if bad_integrity else "pass",
            "check" if bad_integrity else "pass",
            "; ".join(f"{count(v)} {k}" for k, v in integrity.items()) + ".",
        ),
        HealthCheck(
            "Events",
            "info",
            "",
            f"{count(h.events)} events; {count(h.events_before_exposure)} before a user's "
            "exposure (not outcomes"
            + ("; the CUPED pre-period" if report.settings.cuped_days else "")
            + f"); {count(h.events_outside_population)} outside the analysed population"
            + (
                f"; {count(h.events_far_outside)} with timestamps far outside the experiment "
                "(over a year from its exposures), left out of the daily series: check ts."
                if h.events_far_outside
                else "."
            ),
        ),
        HealthCheck(
            "Data freshness",
            "info",
            "",
            span + (f"; the last one {fresh} before this report." if fresh else "."),
        ),
    )


def _window_and_cap_checks(report: ExperimentReport) -> tuple[HealthCheck, ...]:
    """An ``Analysis window`` row when the report has one, an ``Outlier capping`` row
    per capped variable (docs/metrics.md#analysis-window, #outlier-capping)."""
    s, h = report.settings, report.health
    rows = []
    if s.window_rule:
        rows.append(
            HealthCheck(
                "Analysis window",
                "info",
                "",
                f"Events from {when(s.window_from) if s.window_from else 'the first event'} "
                f"to {when(s.window_to) if s.window_to else 'the last event'} (excluded), "
                f"{s.window_rule}; {count(h.events_outside_window)} events outside it are "
                "not analysed.",
            )
        )
    for c in report.caps:
        arms = ", ".join(f"{arm} {count(n)}" for arm, n in c.users_capped.items())
        rows.append(
            HealthCheck(
                "Outlier capping",
                "info",
                "",
                f"Per-user {c.variable} capped at its {c.quantile:g} quantile over both arms, "
                f"{number(c.cap)} ({', '.join(c.metrics)}): {count(c.users_capped_total)} "
                f"users above it ({arms})."
                + (
                    f" {capping_bias(c.lift_kept).capitalize()}." if c.lift_kept is not None else ""
                ),
            )
        )
    return tuple(rows)


# --------------------------------------------------------------------------- metric tables

_ROLE_TITLES: dict[Role, tuple[str, str, str]] = {
    "primary": (
        "metrics",
        "Primary metrics",
        "The metrics the decision rests on.",
    ),
    "guardrail": (
        "guardrails",
        "Guardrails",
        "Metrics that must not get significantly worse, whatever the primary metrics do.",
    ),
    "secondary": (
        "secondary",
        "Secondary metrics",
        "Context for the decision, corrected within their own family.",
    ),
}


def _names(m: OnlineMetricResult, catalog: Catalog) -> tuple[str, str, str]:
    """Numerator and denominator names and the description of a metric (a team
    metric's variables by what they count, from the store's ``catalog``)."""
    spec = catalog.get(m.metric)
    if spec is None:
        return "numerator", "denominator", ""
    numerator = catalog.labels.get(spec.numerator, spec.numerator)
    denominator = (
        catalog.labels.get(spec.denominator, spec.denominator) if spec.denominator else None
    )
    return numerator, denominator or "users", spec.description


def _as_percent(m: OnlineMetricResult) -> bool:
    """Rates print as percentages: proportions, and ratios whose numerator never
    exceeds the denominator (CTR); other ratios (average order value) as numbers."""
    if m.kind == "proportion":
        return True
    if m.kind == "ratio":
        return all(
            v.numerator is not None
            and v.denominator is not None
            and v.denominator > 0
            and 0 <= v.numerator <= v.denominator
            for v in (m.control, m.treatment)
        )
    return False


def _bars(lifts: Sequence[Lift]) -> tuple[list[IntervalBar], tuple[Tick, ...]]:
    """The bar of each lift's interval on one scale shared by a table, and the
    labels of that scale's axis."""
    scale = bar_scale([lift.interval for lift in lifts])
    return [interval_bar(scale, lift.interval, lift.effect) for lift in lifts], bar_axis(scale)


def _metric_table(
    role: Role,
    results: list[OnlineMetricResult],
    catalog: Catalog,
    caps: Sequence[CapInfo] = (),
) -> MetricTable:
    capped = {m: capping_bias(c.lift_kept) for c in caps for m in c.metrics}
    lifts = [m.comparison.relative for m in results]
    bars, axis = _bars(lifts)
    rows = []
    for m, rel, bar in zip(results, lifts, bars, strict=True):
        numerator, denominator, description = _names(m, catalog)
        lower_is_better = m.lower_is_better
        rows.append(
            OnlineMetricRow(
                result=m,
                interval=rel.interval,
                corrected=rel.ci_adjusted is not None,
                tone=tone(m.significant, m.comparison.absolute.effect, lower_is_better),
                as_percent=_as_percent(m),
                numerator=numerator,
                denominator=denominator,
                description=description,
                lower_is_better=lower_is_better,
                bar=bar,
                absolute=signed(m.comparison.absolute.effect),
                reference=reference_words(m),
                capped=capped.get(m.metric, ""),
                decided=decided_words(m),
            )
        )
    anchor, title, note = _ROLE_TITLES[role]
    return MetricTable(
        role=role,
        anchor=anchor,
        title=title,
        note=note,
        rows=tuple(rows),
        axis=axis,
        unbounded=unbounded_notes(lifts),
    )


def metric_tables(report: ExperimentReport) -> tuple[MetricTable, ...]:
    """The primary, guardrail and secondary tables; a role without metrics has none."""
    roles: tuple[Role, ...] = ("primary", "guardrail", "secondary")
    by_role = {role: [m for m in report.metrics if m.role == role] for role in roles}
    return tuple(
        _metric_table(role, by_role[role], report.catalog, report.caps)
        for role in roles
        if by_role[role]
    )


# --------------------------------------------------------------------------- over time


def lift_charts(report: ExperimentReport) -> tuple[LiftChart, ...]:
    """Per primary metric and treatment arm, two charts with daily points: the
    cumulative lift, and the lift of each day's activity alone (when the report
    has it; a novelty effect shows as a day lift that decays)."""
    cumulative: dict[tuple[str, str], list[DayLift]] = {}
    own: dict[tuple[str, str], list[DayLift]] = {}
    for p in report.daily:
        cumulative.setdefault((p.metric, p.arm), []).append(
            DayLift(p.day, p.relative_lift, p.ci, shown=p.shown)
        )
        own.setdefault((p.metric, p.arm), []).append(DayLift(p.day, p.day_lift, p.day_ci))
    charts = []
    for (metric, arm), points in cumulative.items():
        label = metric_label(report, metric)
        charts.append(lift_chart(metric, label, arm, sorted(points, key=lambda d: d.day)))
        days = sorted(own[(metric, arm)], key=lambda d: d.day)
        if any(d.lift is not None for d in days):
            charts.append(lift_chart(metric, label, arm, days, kind="day"))
    return tuple(charts)


def daily_users_chart(report: ExperimentReport, control: str) -> UsersChart | None:
    """Cumulative users per day per arm (control first); None without daily points."""
    if not report.daily:
        return None
    days = sorted({p.day for p in report.daily})
    by_day: dict[str, dict[str, int]] = {d: {} for d in days}
    for p in report.daily:
        by_day[p.day][control] = p.control_users
        by_day[p.day][p.arm] = p.treatment_users
    arms = [control] + [a.arm for a in report.arms if a.arm != control]
    cumulative: dict[str, list[int]] = {}
    for arm in arms:
        values, last = [], 0
        for d in days:
            last = by_day[d].get(arm, last)
            values.append(last)
        if any(values):
            cumulative[arm] = values
    return users_chart(days, cumulative)


# --------------------------------------------------------------------------- power


def power_lines(report: ExperimentReport, total_users: int) -> tuple[PowerLine, ...]:
    """Power per primary metric and arm, with the share of the needed users reached."""
    lines = []
    for p in report.power:
        needed = p.needed_for_target.total_users
        progress = min(total_users / needed, 1.0) if needed else None
        label = metric_label(report, p.metric)
        lines.append(PowerLine(info=p, label=label, progress=progress, looks=looks_text(p)))
    return tuple(lines)


# --------------------------------------------------------------------------- offline, segments


def offline_table(report: ExperimentReport) -> OfflineTable | None:
    """The offline section (:mod:`abeval.report.offline_view`): the replayed
    comparisons that can vary, drawn as the metric tables draw theirs."""
    if not report.offline:
        return None
    view = offline_view(report)
    lifts = [o.comparison.relative for o in view.rows]
    bars, axis = _bars(lifts)
    rows = []
    for o, rel, bar in zip(view.rows, lifts, bars, strict=True):
        marked = significant(o)
        rows.append(
            OfflineRow(
                result=o,
                interval=rel.interval,
                significant=marked,
                bar=bar,
                tone=tone(marked, rel.effect, offline_lower_is_better(o.metric)),
            )
        )
    return OfflineTable(
        rows=tuple(rows),
        axis=axis,
        view=view,
        corrected=any(rel.ci_adjusted is not None for rel in lifts),
        unbounded=unbounded_notes(lifts),
    )


def segment_table(report: ExperimentReport) -> SegmentTable | None:
    """The segment breakdown, primary metrics first; None without one."""
    if not report.segments:
        return None
    lifts = [g.comparison.relative for g in report.segments]
    bars, axis = _bars(lifts)
    rows = []
    for g, rel, bar in zip(report.segments, lifts, bars, strict=True):
        significant = direction(g.comparison) != 0
        rows.append(
            SegmentRow(
                result=g,
                label=metric_label(report, g.metric),
                interval=rel.interval,
                significant=significant,
                tone=tone(significant, rel.effect, report.catalog.lower_is_better(g.metric)),
                bar=bar,
            )
        )
    order = {m: i for i, m in enumerate(report.settings.primary)}
    rows.sort(key=lambda r: (order.get(r.result.metric, len(order)), r.result.metric))
    return SegmentTable(
        segment=report.settings.segment or report.segments[0].segment,
        rows=tuple(rows),
        axis=axis,
        unbounded=unbounded_notes(lifts),
    )


# --------------------------------------------------------------------------- methodology


def statistics_table(report: ExperimentReport) -> StatisticsTable:
    """The sufficient statistics per arm, transposed: one row per sum."""
    stats = report.methodology.sufficient_statistics
    order = [a.arm for a in report.arms if a.arm in stats]
    order += [a for a in stats if a not in order]
    sums: dict[str, list[float | None]] = {}
    cross: dict[str, list[float | None]] = {}
    users: list[int | None] = []
    for i, arm in enumerate(order):
        entry = stats[arm] if isinstance(stats[arm], dict) else {}
        n = entry.get("n")
        users.append(int(n) if isinstance(n, int | float) else None)
        for target, key in ((sums, "sum"), (cross, "centred_cross_products")):
            values = entry.get(key) or {}
            for name, value in values.items():
                target.setdefault(name, [None] * len(order))[i] = value
    return StatisticsTable(
        arms=tuple(order),
        users=tuple(users),
        sums=tuple((k, tuple(v)) for k, v in sums.items()),
        cross=tuple((k, tuple(v)) for k, v in cross.items()),
    )
