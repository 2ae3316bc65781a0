"""Terminal rendering of an :class:`~abeval.analysis.report_model.ExperimentReport`.

Numbers become text through :mod:`abeval.formatting`, as on the HTML page; metric
values use :func:`~abeval.formatting.terminal_number` (one decimal from 100 up).
Intervals are :attr:`Lift.interval <abeval.stats.results.Lift.interval>` of the
comparisons made under the decision's basis (:mod:`abeval.analysis.basis`): the
multiplicity-corrected one wherever the report has it, as on the HTML page; the
fixed-horizon interval appears only on an indented "for reference" line.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from abeval.analysis.report_model import CapInfo, ExperimentReport, OnlineMetricResult
from abeval.formatting import (
    NA,
    lift_interval,
    number,
    pct,
    printable,
    pvalue,
    share,
    signed,
    terminal_number,
    unbounded_notes,
    when,
)
from abeval.report.decision_text import (
    basis_sentence,
    guardrail_power_line,
    guardrail_sentence,
    looks_text,
    sources_line,
)
from abeval.report.interleaving_text import header_line, interleaving_lines
from abeval.report.method_text import (
    basis_words,
    cuped_text,
    decided_words,
    events_text,
    prior_text,
    reference_words,
    span_text,
)
from abeval.report.offline_view import (
    BeyondRow,
    offline_status_text,
    offline_view,
    significant,
)
from abeval.report.ope_text import ope_lines
from abeval.report.predicted_text import predicted_lines
from abeval.report.words import capping_bias, decision_reason, said
from abeval.stats.results import Lift

#: Why the replayed metrics are not judged against the online lift (docs/metrics.md#log-replay).
REPLAY_NOTE = (
    "  Replayed metrics come from the same logged lists and clicks as CTR: they are not "
    "independent evidence of the online lift, so no agreement is judged (see the "
    "off-policy estimates for a prediction that does not use the target's clicks)."
)


LIFT_HEADER = f"{'lift':>9} {'interval':>22} {'p':>8} {'p adj':>8}"


def lift_cells(rel: Lift) -> str:
    """The relative lift, its interval (corrected where the report corrected it;
    ``unbounded`` for an unbounded Fieller interval), p and adjusted p: the columns
    of every comparison table (:data:`LIFT_HEADER`)."""
    return (
        f"{pct(rel.effect):>9} {lift_interval(rel):>22} {pvalue(rel.p_value):>8} "
        f"{pvalue(rel.p_adjusted):>8}"
    )


def _unbounded(lifts: Iterable[Lift]) -> list[str]:
    """Once under a table: why an interval there reads ``unbounded``."""
    return [f"  {note}" for note in unbounded_notes(lifts)]


def _metric_row(m: OnlineMetricResult) -> str:
    rel = m.comparison.relative
    mark = "*" if m.significant else " "
    chance = m.bayesian.relative.chance_to_win
    cuped = " cuped" if m.comparison.cuped else ""
    status = "" if m.status == "ok" else f"  ({said(m.status, m.message)})"
    absolute = signed(m.comparison.absolute.effect)
    return (
        f"{mark} {m.label:<22} {m.arm:<12} "
        f"{terminal_number(m.control.value):>10} {terminal_number(m.treatment.value):>10} "
        f"{absolute:>10} {lift_cells(rel)} {share(chance, 2):>7}{cuped}{status}"
    )


CONTROL_RULES = {
    "option": "chosen with --control",
    "recorded": "recorded with abeval experiment set",
    "named_control": "the arm named control",
}


def _decisions(r: ExperimentReport) -> list[str]:
    """The first lines: one overall decision per treatment arm, what it read, and
    each guardrail's reading."""
    lines = []
    for d in r.decisions:
        reason = decision_reason(d, r.catalog)
        lines.append(f"DECISION {d.arm}: {d.decision.replace('_', ' ').upper()}: {reason}")
        lines.append(f"  {basis_sentence(d, r.experiment)}")
        lines += [f"  guardrail {guardrail_sentence(g, r.catalog)}" for g in d.guardrails]
    return [*lines, ""] if lines else []


def _header(r: ExperimentReport) -> list[str]:
    s = r.settings
    rule = CONTROL_RULES.get(s.control_rule, s.control_rule)
    span = span_text(r)
    lines = [
        f"abeval {r.abeval_version} · experiment {r.experiment}" + (f" · {span}" if span else ""),
        f"METHOD {basis_words(r)}",
        events_text(r),
        f"control {s.control} ({rule}); unit {s.unit}; alpha {s.alpha}; "
        f"{s.correction} correction; {cuped_text(r)}"
        + (f"; tuning n {s.tuning_n:,.0f}" if s.tuning_n else ""),
        "arms: " + ", ".join(f"{a.arm} {a.users:,} users" for a in r.arms),
    ]
    if s.window_rule:
        lines.append(
            f"window {when(s.window_from) if s.window_from else 'first event'} .. "
            f"{when(s.window_to) if s.window_to else 'last event'} "
            f"(end excluded; {s.window_rule}); {r.health.events_outside_window:,} events "
            "outside it not analysed"
        )
    lines += [cap_line(c) for c in r.caps]
    if s.prior != "flat":
        lines.append(f"PRIOR of the Bayesian view (P(win)): {prior_text(s)}")
    sources = sources_line(s)
    if sources:
        lines.append(sources)
    return [*lines, ""]


def cap_line(c: CapInfo) -> str:
    """``capped revenue at its 0.99 quantile, 512.3 (revenue_per_user, aov): 8 users
    above (control 3, treatment 5)``."""
    arms = ", ".join(f"{arm} {n:,}" for arm, n in c.users_capped.items())
    bias = capping_bias(c.lift_kept)
    return (
        f"capped {c.variable} at its {c.quantile:g} quantile, {number(c.cap)} "
        f"({', '.join(c.metrics)}): {c.users_capped_total:,} users above ({arms})"
        + (f"; {bias}" if bias else "")
    )


def _health(r: ExperimentReport) -> list[str]:
    h = r.health
    lines = [f"!! {problem}" for problem in h.problems] + ([""] if h.problems else [])
    lines.append(
        f"sample ratio: p = {pvalue(h.srm.p_value)} ({'MISMATCH' if h.srm.flagged else 'ok'}); "
        f"users in several arms: {h.users_in_several_arms:,}; "
        f"clicks without impression: {h.clicks_without_impression:,}; "
        f"purchases without click: {h.purchases_without_click:,}; "
        f"duplicate impressions: {h.duplicate_impressions:,}"
    )
    if h.events_far_outside:
        lines.append(
            f"{h.events_far_outside:,} events have timestamps far outside the experiment "
            "(over a year from its exposures): left out of the daily series; check ts"
        )
    return [*lines, ""]


def _verdicts(r: ExperimentReport) -> list[str]:
    return [
        f"VERDICT {v.metric} ({v.arm}): {v.verdict.replace('_', ' ').upper()}: {v.reason}"
        for v in r.verdicts
    ]


def _metric_tables(r: ExperimentReport) -> list[str]:
    header = (
        f"  {'metric':<22} {'arm':<12} {'control':>10} {'treatment':>10} {'abs lift':>10} "
        f"{LIFT_HEADER} "
        f"{'P(win)':>7}"
    )
    lines: list[str] = []
    for role, title in (
        ("primary", "Primary metrics"),
        ("guardrail", "Guardrails"),
        ("secondary", "Secondary metrics"),
    ):
        rows = [m for m in r.metrics if m.role == role]
        if rows:
            lines += ["", title, header]
            for m in rows:
                lines.append(_metric_row(m))
                decided = decided_words(m)
                lines += [f"      {decided}"] if decided else []
                reference = reference_words(m)
                lines += [f"      for reference, {reference}"] if reference else []
    lines.append(
        "  * significant after correction; abs lift = treatment − control (CUPED-adjusted "
        "where used); intervals are relative lifts, corrected"
    )
    return lines + _unbounded(m.comparison.relative for m in r.metrics)


def _offline(r: ExperimentReport) -> list[str]:
    if not r.offline:
        status = offline_status_text(r.offline_status)
        return ["", f"Offline metrics: {status}"] if status else []
    view = offline_view(r)
    online = f"; {view.online}" if view.online else ""
    lines = [
        "",
        f"Offline metrics replayed from the logs (per user, then per arm{online})",
        f"  {'metric':<16} {'arm':<12} {'control':>9} {'treatment':>9} {LIFT_HEADER}",
    ]
    for o in view.rows:
        lines.append(
            f"{'*' if significant(o) else ' '} {o.metric:<16} {o.arm:<12} "
            f"{terminal_number(o.control_value):>9} {terminal_number(o.treatment_value):>9} "
            f"{lift_cells(o.comparison.relative)}"
        )
    lines.append(
        f"  * significant after {r.settings.correction} correction over these "
        f"{view.comparisons} comparisons; intervals are relative lifts, corrected"
    )
    lines += _unbounded(o.comparison.relative for o in view.rows)
    lines += [f"  not shown: {reason}" for reason in view.hidden]
    lines += [f"  {line}" for line in view.legend]
    lines.append(REPLAY_NOTE)
    return lines + _beyond(view.arms, view.beyond)


def _beyond(arms: tuple[str, ...], rows: Iterable[BeyondRow]) -> list[str]:
    """The beyond-accuracy metrics: one value per arm over its top-K lists."""
    rows = list(rows)
    if not rows:
        return []
    lines = [
        "",
        "Beyond accuracy (over each arm's top-K lists: one value per arm, no test)",
        f"  {'metric':<16} " + " ".join(f"{arm:>12}" for arm in arms),
    ]
    for row in rows:
        cells = " ".join(f"{terminal_number(v.value if v else None):>12}" for v in row.values)
        lines.append(f"  {row.metric:<16} {cells}")
    return lines


CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def _power(r: ExperimentReport) -> list[str]:
    if not r.power:
        return []
    s = r.settings
    lines = ["", "Power"]
    if s.planning_alpha is not None and s.planning_rule != "single_test":
        lines.append(
            f"  planned at alpha {s.planning_alpha:.3g}: {s.alpha:g} over the "
            f"{len(r.power)} primary comparisons, the smallest step of the "
            f"{CORRECTION_NAMES.get(s.correction, s.correction)} correction the decision uses"
        )
    for p in r.power:
        days = (
            f"; about {p.more_days_needed:.1f} more days at the current traffic"
            if p.more_days_needed
            else ""
        )
        if not p.feasible:
            more = f" ({p.more_days_needed:,.0f} more days)" if p.more_days_needed else ""
            days = f"; not feasible at this traffic{more}"
        needed = p.needed_for_target.total_users
        lines.append(
            f"  {p.metric} ({p.arm}): could detect {pct(p.detectable.mde_relative)} at "
            f"{share(p.detectable.power, 0)} power; a {share(r.settings.target_mde, 0)} lift needs "
            + (
                f"{needed:,} users in all{days}"
                if needed is not None
                else f"an unknown number of users ({NA})"
            )
        )
        looks = looks_text(p)
        if looks:
            lines.append(f"    {looks}")
    lines += [f"  {guardrail_power_line(g)}" for g in r.guardrail_power]
    return lines


def _segments(r: ExperimentReport) -> list[str]:
    if not r.segments:
        return []
    s = r.settings
    lines = ["", f"Segments by {s.segment} ({s.correction}-corrected over all slices)"]
    if r.segment_warning:
        lines.append(f"  ! {r.segment_warning}")
    for g in r.segments:
        rel = g.comparison.relative
        lines.append(
            f"  {g.value:<14} {g.metric:<12} {g.arm:<12} {pct(rel.effect):>9} "
            f"{lift_interval(rel):>22} p adj {pvalue(rel.p_adjusted)}"
        )
    return lines + _unbounded(g.comparison.relative for g in r.segments)


def render_text(r: ExperimentReport, *, verbose: bool = False) -> str:
    """The report as plain text: the decisions, header, health, verdicts, the metric
    tables, then the offline replay, the off-policy estimates, the predicted lifts, power and
    segments
    when the report has them; the long diagnostics (each position's off-policy
    weights) only when ``verbose``."""
    if r.interleaving is not None:  # one arm: the comparison is of rankers, not arms
        title, *_ = _header(r)
        s = r.interleaving
        shown = (
            title,
            events_text(r),
            header_line(s, r.settings.alpha),
            "",
            *interleaving_lines(s),
        )
        return "\n".join(printable(line) for line in shown) + "\n"
    sections = (
        _decisions,
        _header,
        _health,
        _verdicts,
        _metric_tables,
        _offline,
        partial(ope_lines, verbose=verbose),
        predicted_lines,
        _power,
        _segments,
    )
    # Names come from the data: escape control characters so that an experiment
    # or arm name cannot drive the terminal.
    return "\n".join(printable(line) for section in sections for line in section(r)) + "\n"
