"""The HTML report: one self-contained page a product team can decide from.

:func:`render_html` turns an :class:`~abeval.analysis.report_model.ExperimentReport`
into a single HTML file with inline CSS and inline SVG charts: no JavaScript, no
web fonts, nothing fetched from the network. The templates live in the top-level
``reports/`` folder (``report.html.j2``, ``_macros.html.j2``, ``report.css``),
found through :func:`abeval.resources.data_dir` both in a checkout and in a wheel.

The page is rendered from one object, :class:`ReportContext`, built by
:func:`build_context`. It holds the report itself (every number on the page is
read from it) plus presentation decisions: which table a metric goes in, which
interval is drawn, where a bar or a line falls in pixels, which colour a row
gets. Nothing here computes a statistic; numbers become text through the Jinja
filters of :mod:`abeval.formatting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from abeval.analysis.online_metrics import METRICS
from abeval.analysis.report_model import (
    ArmInfo,
    ExperimentReport,
    MetricResult,
    OfflineResult,
    PowerInfo,
    Role,
    SegmentResult,
    VerdictResult,
)
from abeval.formatting import FILTERS, count, fixed, parse_time, pvalue, share
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
from abeval.resources import data_dir

Tone = Literal["good", "bad", ""]
CheckState = Literal["pass", "fail", "warn", "info"]

TEMPLATE = "report.html.j2"


def default_path(experiment: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in experiment)
    return Path("reports") / f"{safe}.html"


# --------------------------------------------------------------------------- context


@dataclass(frozen=True)
class HealthCheck:
    """One row of the health table: ``name`` of the check, ``state`` (pass, fail,
    warn or info: sets the colour), ``result`` (the word shown) and ``detail``."""

    name: str
    state: CheckState
    result: str
    detail: str


@dataclass(frozen=True)
class VerdictLine:
    """One primary metric's verdict: the model's ``verdict`` (with its reason),
    the metric's ``label`` and the banner ``tone`` (good, bad, warn or neutral)."""

    verdict: VerdictResult
    label: str
    tone: str


@dataclass(frozen=True)
class MetricRow:
    """One metric × treatment arm of a metric table.

    ``result`` is the model's :class:`MetricResult`; ``interval`` the relative
    interval shown (the multiplicity-corrected one when the report has it,
    ``corrected`` says which); ``tone`` is good or bad only when the result is
    significant after correction; ``as_percent`` prints the arm values as
    percentages (rates); ``numerator``/``denominator`` name the raw sums under
    the values; ``bar`` is the interval's SVG geometry.
    """

    result: MetricResult
    interval: tuple[float, float] | None
    corrected: bool
    tone: Tone
    as_percent: bool
    numerator: str
    denominator: str
    description: str
    lower_is_better: bool
    bar: IntervalBar


@dataclass(frozen=True)
class MetricTable:
    """The metrics of one role (primary, guardrail or secondary): ``anchor`` is
    the section id, ``axis`` the labels of the shared bar axis."""

    role: Role
    anchor: str
    title: str
    note: str
    rows: tuple[MetricRow, ...]
    axis: tuple[Tick, ...]


@dataclass(frozen=True)
class PowerLine:
    """Power of one primary metric and arm: the model's ``info``, the metric's
    ``label`` and ``progress``, the share of the users a target-sized effect needs
    that the test already has (capped at 1; None when the need is unknown)."""

    info: PowerInfo
    label: str
    progress: float | None


@dataclass(frozen=True)
class OfflineRow:
    """One replayed offline metric and arm: the model's ``result``, the online
    metric it is compared with (``online``, None when absent), ``bar`` and ``tone``
    (good/bad when its interval excludes zero)."""

    result: OfflineResult
    online: MetricResult | None
    interval: tuple[float, float] | None
    bar: IntervalBar
    tone: Tone


@dataclass(frozen=True)
class OfflineTable:
    rows: tuple[OfflineRow, ...]
    axis: tuple[Tick, ...]


@dataclass(frozen=True)
class SegmentRow:
    """One segment value × metric × arm: the model's ``result``, the metric
    ``label``, the corrected ``interval``, whether it excludes zero
    (``significant``), its ``tone`` and ``bar``."""

    result: SegmentResult
    label: str
    interval: tuple[float, float] | None
    significant: bool
    tone: Tone
    bar: IntervalBar


@dataclass(frozen=True)
class SegmentTable:
    """Segment rows by ``segment`` (the attribute), with the shared bar ``axis``."""

    segment: str
    rows: tuple[SegmentRow, ...]
    axis: tuple[Tick, ...]


@dataclass(frozen=True)
class StatisticsTable:
    """The sufficient statistics per arm, transposed for a table: ``arms`` in
    column order, ``users`` per arm, ``sums`` and ``cross`` as (name, value per
    arm) rows (None where an arm lacks that entry)."""

    arms: tuple[str, ...]
    users: tuple[int | None, ...]
    sums: tuple[tuple[str, tuple[float | None, ...]], ...]
    cross: tuple[tuple[str, tuple[float | None, ...]], ...]


@dataclass(frozen=True)
class ReportContext:
    """Everything ``report.html.j2`` reads, in one object (the template's ``ctx``).

    Keys:

    - ``report``: the :class:`ExperimentReport` itself; every number on the page
      comes from it.
    - ``title``: the page title.
    - ``control``: the control arm's :class:`ArmInfo`; ``treatments``: the other arms.
    - ``total_users``: users analysed in all arms (sum of ``report.arms``).
    - ``first_day``, ``last_day``, ``days``: the test's calendar span from the daily
      points (falling back to the first and last event), and its length in days.
    - ``method``: one line naming the method (fixed horizon or sequential), CUPED
      and the Bayesian view.
    - ``alerts``: the failed health checks, one sentence each, shown in the red
      banner at the top (empty: no banner); ``srm_failed``: the sample ratio check
      failed.
    - ``checks``: the rows of the health table (:class:`HealthCheck`).
    - ``verdicts``: one :class:`VerdictLine` per primary metric and arm.
    - ``tables``: the metric tables (:class:`MetricTable`), primary, then
      guardrails, then secondary; empty roles are left out.
    - ``lift_charts``: one :class:`LiftChart` per primary metric and arm
      (cumulative lift by day); ``users_chart``: new users per day per arm
      (:class:`UsersChart`, None without daily points).
    - ``power``: one :class:`PowerLine` per primary metric and arm.
    - ``offline``: an :class:`OfflineTable`, None when the report has no offline
      results (the page then shows ``report.offline_status``).
    - ``segments``: a :class:`SegmentTable`, None without a segment breakdown.
    - ``cuped``: the metric rows whose comparison used CUPED (methodology table).
    - ``statistics``: the sufficient statistics as a :class:`StatisticsTable`.
    - ``settings``: (name, value) rows of the methodology's settings table.
    - ``generated``: when the report was generated, formatted.
    - ``freshness``: how long before the report the last event happened, in
      words (empty when unknown).
    """

    report: ExperimentReport
    title: str
    control: ArmInfo
    treatments: tuple[ArmInfo, ...]
    total_users: int
    first_day: str | None
    last_day: str | None
    days: int | None
    method: str
    alerts: tuple[str, ...]
    srm_failed: bool
    checks: tuple[HealthCheck, ...]
    verdicts: tuple[VerdictLine, ...]
    tables: tuple[MetricTable, ...]
    lift_charts: tuple[LiftChart, ...]
    users_chart: UsersChart | None
    power: tuple[PowerLine, ...]
    offline: OfflineTable | None
    segments: SegmentTable | None
    cuped: tuple[MetricRow, ...]
    statistics: StatisticsTable
    settings: tuple[tuple[str, str], ...]
    generated: str
    freshness: str


# --------------------------------------------------------------------------- builders

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

_VERDICT_TONES = {
    "ship": "good",
    "roll_back": "bad",
    "invalid": "bad",
    "keep_running": "warn",
    "no_effect": "neutral",
}


def _lower_is_better(m: MetricResult) -> bool:
    return bool(m.bayesian.lower_is_better)


def _tone(significant: bool, effect: float | None, lower_is_better: bool) -> Tone:
    if not significant or effect is None or effect == 0:
        return ""
    better = effect < 0 if lower_is_better else effect > 0
    return "good" if better else "bad"


def _excludes_zero(ci: Sequence[float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def _names(m: MetricResult) -> tuple[str, str, str]:
    """Numerator and denominator names and the description of a metric."""
    spec = METRICS.get(m.metric)
    if spec is None:
        return "numerator", "denominator", ""
    return spec.numerator, spec.denominator or "users", spec.description


def _as_percent(m: MetricResult) -> bool:
    """Rates print as percentages: proportions, and ratios whose numerator never
    exceeds the denominator (CTR); other ratios (average order value) as numbers."""
    if m.kind == "proportion":
        return True
    if m.kind == "ratio":
        return all(
            v.denominator > 0 and 0 <= v.numerator <= v.denominator
            for v in (m.control, m.treatment)
        )
    return False


def _metric_tables(report: ExperimentReport) -> tuple[MetricTable, ...]:
    tables = []
    for role in ("primary", "guardrail", "secondary"):
        results = [m for m in report.metrics if m.role == role]
        if not results:
            continue
        intervals = [m.comparison.relative.ci_adjusted or m.comparison.relative.ci for m in results]
        scale = bar_scale(intervals)
        rows = []
        for m, ci in zip(results, intervals, strict=True):
            rel = m.comparison.relative
            numerator, denominator, description = _names(m)
            rows.append(
                MetricRow(
                    result=m,
                    interval=ci,
                    corrected=rel.ci_adjusted is not None,
                    tone=_tone(m.significant, m.comparison.absolute.effect, _lower_is_better(m)),
                    as_percent=_as_percent(m),
                    numerator=numerator,
                    denominator=denominator,
                    description=description,
                    lower_is_better=_lower_is_better(m),
                    bar=interval_bar(scale, ci, rel.effect),
                )
            )
        anchor, title, note = _ROLE_TITLES[role]
        tables.append(
            MetricTable(
                role=role,
                anchor=anchor,
                title=title,
                note=note,
                rows=tuple(rows),
                axis=bar_axis(scale),
            )
        )
    return tuple(tables)


def _label(report: ExperimentReport, metric: str) -> str:
    for m in report.metrics:
        if m.metric == metric:
            return m.label
    spec = METRICS.get(metric)
    return spec.label if spec else metric


def _lift_charts(report: ExperimentReport) -> tuple[LiftChart, ...]:
    series: dict[tuple[str, str], list[DayLift]] = {}
    for p in report.daily:
        series.setdefault((p.metric, p.arm), []).append(DayLift(p.day, p.relative_lift, p.ci))
    return tuple(
        lift_chart(metric, _label(report, metric), arm, sorted(points, key=lambda d: d.day))
        for (metric, arm), points in series.items()
    )


def _users_chart(report: ExperimentReport, control: str) -> UsersChart | None:
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


def _checks(report: ExperimentReport, freshness: str) -> tuple[HealthCheck, ...]:
    h = report.health
    srm = h.srm
    arms = report.arms
    if srm.status != "ok":
        srm_state: CheckState = "info"
        srm_detail = srm.message or srm.status
    else:
        srm_state = "fail" if srm.flagged else "pass"
        parts = []
        for i, a in enumerate(arms):
            expected = (
                f"expected {count(round(srm.expected[i]))}, {share(a.expected_share)}"
                if srm.expected is not None and i < len(srm.expected)
                else f"expected {share(a.expected_share)}"
            )
            parts.append(f"{a.arm} {count(a.users)} ({expected})")
        srm_detail = (
            "; ".join(parts)
            + f". χ² = {fixed(srm.statistic, 2)}, {_p_equals(srm.p_value)}; "
            + f"flagged when p < {srm.threshold:g}."
        )
    several = h.users_in_several_arms
    integrity = {
        "clicks without an impression": h.clicks_without_impression,
        "purchases without a click": h.purchases_without_click,
        "duplicate impressions": h.duplicate_impressions,
    }
    bad_integrity = {k: v for k, v in integrity.items() if v}
    first, last = parse_time(h.first_ts), parse_time(h.last_ts)
    span = (
        f"events from {FILTERS['when'](h.first_ts)} to {FILTERS['when'](h.last_ts)}"
        if first and last
        else "no events"
    )
    return (
        HealthCheck(
            "Sample ratio",
            srm_state,
            {"pass": "pass", "fail": "FAIL", "info": "n/a"}[srm_state],
            srm_detail,
        ),
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
            + f"); {count(h.events_outside_population)} outside the analysed population.",
        ),
        HealthCheck(
            "Data freshness",
            "info",
            "",
            span + (f"; the last one {freshness} before this report." if freshness else "."),
        ),
    )


def _p_equals(p: float | None) -> str:
    text = pvalue(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _freshness(report: ExperimentReport) -> str:
    last, generated = parse_time(report.health.last_ts), parse_time(report.generated_at)
    if last is None or generated is None:
        return ""
    hours = (generated - last).total_seconds() / 3600
    if hours < 0:
        return ""
    if hours < 48:
        return f"{hours:.0f} hours"
    return f"{hours / 24:.0f} days"


def _power_lines(report: ExperimentReport, total_users: int) -> tuple[PowerLine, ...]:
    lines = []
    for p in report.power:
        needed = p.needed_for_target.total_users
        progress = min(total_users / needed, 1.0) if needed else None
        lines.append(PowerLine(info=p, label=_label(report, p.metric), progress=progress))
    return tuple(lines)


def _offline(report: ExperimentReport) -> OfflineTable | None:
    if not report.offline:
        return None
    intervals = [
        o.comparison.relative.ci_adjusted or o.comparison.relative.ci for o in report.offline
    ]
    scale = bar_scale(intervals)
    rows = []
    for o, ci in zip(report.offline, intervals, strict=True):
        online = next(
            (m for m in report.metrics if m.metric == o.agrees_with and m.arm == o.arm), None
        )
        rows.append(
            OfflineRow(
                result=o,
                online=online,
                interval=ci,
                bar=interval_bar(scale, ci, o.comparison.relative.effect),
                tone=_tone(_excludes_zero(ci), o.comparison.relative.effect, False),
            )
        )
    return OfflineTable(rows=tuple(rows), axis=bar_axis(scale))


def _segments(report: ExperimentReport) -> SegmentTable | None:
    if not report.segments:
        return None
    intervals = [
        g.comparison.relative.ci_adjusted or g.comparison.relative.ci for g in report.segments
    ]
    scale = bar_scale(intervals)
    lower = {m.metric: _lower_is_better(m) for m in report.metrics}
    rows = []
    for g, ci in zip(report.segments, intervals, strict=True):
        significant = g.comparison.status == "ok" and _excludes_zero(ci)
        rows.append(
            SegmentRow(
                result=g,
                label=_label(report, g.metric),
                interval=ci,
                significant=significant,
                tone=_tone(significant, g.comparison.relative.effect, lower.get(g.metric, False)),
                bar=interval_bar(scale, ci, g.comparison.relative.effect),
            )
        )
    order = {m: i for i, m in enumerate(report.settings.primary)}
    rows.sort(key=lambda r: (order.get(r.result.metric, len(order)), r.result.metric))
    return SegmentTable(
        segment=report.settings.segment or report.segments[0].segment,
        rows=tuple(rows),
        axis=bar_axis(scale),
    )


def _statistics(report: ExperimentReport) -> StatisticsTable:
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


def _method(report: ExperimentReport) -> str:
    s = report.settings
    if s.method == "sequential":
        tuned = f", tuned at {count(s.tuning_n)} users" if s.tuning_n else ""
        main = f"Sequential: always-valid confidence sequences{tuned}"
    else:
        main = "Fixed horizon: Welch t-test, delta method for ratios"
    cuped = f"CUPED on a {s.cuped_days}-day pre-period" if s.cuped_days else "CUPED off"
    return f"{main} · {cuped} · Bayesian view: chance to beat control"


def _settings(report: ExperimentReport) -> tuple[tuple[str, str], ...]:
    s = report.settings
    rows = [
        ("Control arm", s.control),
        ("Randomisation unit", s.unit),
        ("Significance level α", f"{s.alpha:g} (two-sided)"),
        (
            "Multiple-testing correction",
            {"holm": "Holm", "bh": "Benjamini–Hochberg"}.get(s.correction, s.correction),
        ),
        ("Method", s.method),
        ("Sequential tuning n", count(s.tuning_n) if s.tuning_n else "not sequential"),
        ("CUPED pre-period", f"{s.cuped_days} days" if s.cuped_days else "off"),
        ("Primary metrics", ", ".join(s.primary)),
        ("Guardrails", ", ".join(s.guardrails) or "none"),
        ("Segment", s.segment or "none"),
        ("Target effect (MDE)", share(s.target_mde, 1)),
        ("Power", share(s.power, 0)),
        ("Store", report.store),
        ("Report schema", report.schema_version),
    ]
    return tuple(rows)


def build_context(report: ExperimentReport) -> ReportContext:
    """The one object the template renders (see :class:`ReportContext`)."""
    control = next((a for a in report.arms if a.is_control), report.arms[0])
    treatments = tuple(a for a in report.arms if a is not control)
    total_users = sum(a.users for a in report.arms)
    days = sorted({p.day for p in report.daily})
    first_day: str | None
    last_day: str | None
    n_days: int | None
    if days:
        first_day, last_day, n_days = days[0], days[-1], len(days)
    else:
        first = parse_time(report.health.first_ts)
        last = parse_time(report.health.last_ts)
        first_day = first.date().isoformat() if first else None
        last_day = last.date().isoformat() if last else None
        n_days = (last.date() - first.date()).days + 1 if first and last else None
    alerts = tuple(report.health.problems)
    if report.health.srm.flagged and not alerts:
        alerts = (
            f"Sample ratio mismatch ({_p_equals(report.health.srm.p_value)}): the users per "
            "arm differ from the expected split; lifts below may be biased.",
        )
    tables = _metric_tables(report)
    freshness = _freshness(report)
    return ReportContext(
        report=report,
        title=f"{report.experiment} · abeval experiment report",
        control=control,
        treatments=treatments,
        total_users=total_users,
        first_day=first_day,
        last_day=last_day,
        days=n_days,
        method=_method(report),
        alerts=alerts,
        srm_failed=report.health.srm.flagged,
        checks=_checks(report, freshness),
        verdicts=tuple(
            VerdictLine(v, _label(report, v.metric), _VERDICT_TONES.get(v.verdict, "neutral"))
            for v in report.verdicts
        ),
        tables=tables,
        lift_charts=_lift_charts(report),
        users_chart=_users_chart(report, control.arm),
        power=_power_lines(report, total_users),
        offline=_offline(report),
        segments=_segments(report),
        cuped=tuple(r for t in tables for r in t.rows if r.result.comparison.cuped),
        statistics=_statistics(report),
        settings=_settings(report),
        generated=FILTERS["when"](report.generated_at),
        freshness=freshness,
    )


# --------------------------------------------------------------------------- rendering


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja environment: templates from ``reports/``, autoescaping on,
    undefined names are errors, the formatting filters registered."""
    env = Environment(
        loader=FileSystemLoader(str(data_dir("reports"))),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def render_html(report: ExperimentReport) -> str:
    """The report as one self-contained HTML page."""
    return environment().get_template(TEMPLATE).render(ctx=build_context(report))
