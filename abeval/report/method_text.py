"""How the report's comparisons were made, in words shared by the text and HTML
reports: the basis in force (which interval everything is judged by) and the
reference interval beside it; CUPED named only for the metrics whose comparison
used it; the test's days, with the pre-period's events apart."""

from __future__ import annotations

from abeval.analysis.report_model import ExperimentReport, OnlineMetricResult, PlanRecord, Settings
from abeval.formatting import lift_interval, parse_time, pct, share, when


def cuped_text(r: ExperimentReport) -> str:
    """``CUPED on a 14-day pre-period for CTR, Conversion``; ``CUPED off``; or, when
    no comparison used it, why (docs/metrics.md#cuped)."""
    days = r.settings.cuped_days
    if not days:
        return "CUPED off"
    used = list(dict.fromkeys(m.label for m in r.metrics if m.comparison.cuped))
    if not used:
        return f"CUPED not used: no metric gained from the {days}-day pre-period"
    return f"CUPED on a {days}-day pre-period for {', '.join(used)}"


def test_span(report: ExperimentReport) -> tuple[str | None, str | None, int | None]:
    """First and last day of the test and its length in days: from the daily
    points (the days from the first exposure on), else from the first and last
    event (None when unknown)."""
    days = sorted({p.day for p in report.daily})
    if days:
        return days[0], days[-1], len(days)
    first = parse_time(report.health.first_ts)
    last = parse_time(report.health.last_ts)
    return (
        first.date().isoformat() if first else None,
        last.date().isoformat() if last else None,
        (last.date() - first.date()).days + 1 if first and last else None,
    )


def span_text(report: ExperimentReport) -> str:
    """``2025-03-03 → 2025-03-16 (14 days)``: the test's days; empty when unknown."""
    first, last, days = test_span(report)
    if first is None:
        return ""
    length = f" ({days} day{'s' if days != 1 else ''})" if days else ""
    return f"{first} → {last}{length}"


def events_text(report: ExperimentReport) -> str:
    """When the events run, in the one date format, and how many of them came
    before their user's exposure (the pre-period CUPED reads), listed apart."""
    h = report.health
    line = f"events {when(h.first_ts)} .. {when(h.last_ts)}"
    if h.events_before_exposure:
        line += f", {h.events_before_exposure:,} of them before their user's exposure (pre-period)"
    return line


def basis_words(r: ExperimentReport) -> str:
    """The basis in force, in words: which interval every lift, p-value, star,
    verdict and colour of the report reads (docs/metrics.md#decision).

    ``group-sequential intervals (no plan recorded): ...``;
    ``fixed horizon: the plan of 20,000 users / 14 days is reached``."""
    d = r.decisions[0] if r.decisions else None
    if d is None:
        sequential = r.settings.method == "sequential"
        return "always-valid intervals" if sequential else "fixed-horizon intervals"
    if d.basis == "sequential_requested":
        return "always-valid intervals (--sequential): valid however often you look"
    if d.basis == "sequential_no_plan":
        return (
            "group-sequential intervals (no plan recorded): the error rate spent over a "
            "look per day up to the expected size, valid however often you look"
        )
    p = d.progress
    plan = " / ".join(
        part
        for part in (
            f"{p.plan_users:,} users" if p and p.plan_users is not None else "",
            f"{p.plan_days} days" if p and p.plan_days is not None else "",
        )
        if part
    )
    stamp = r.settings.plan_recorded
    recorded = f" ({plan_record_text(stamp)})" if stamp is not None else ""
    if d.basis == "fixed_plan_reached":
        return f"fixed horizon: the plan of {plan} is reached{recorded}"
    return (
        f"fixed horizon: the plan of {plan} is not reached yet, so no decision before it{recorded}"
    )


def plan_record_text(p: PlanRecord) -> str:
    """When and on what data the plan was recorded: ``recorded 2026-11-29 12:30 UTC,
    on data to 2025-03-09 23:50 UTC: day 7, 15,040 users``; with, when the data had
    reached the plan then, ``; the data had reached it already: a plan made after
    the result could be seen``."""
    data = (
        f"on data to {when(p.data_until)}: day {p.days}, {p.users:,} users"
        if p.data_until
        else "before any data"
    )
    text = f"recorded {when(p.recorded_at)}, {data}"
    if p.after_data:
        text += "; the data had reached it already: a plan made after the result could be seen"
    return text


def reference_words(m: OnlineMetricResult) -> str:
    """``fixed horizon: +7.32% [+5.20%, +9.47%] (valid only when read once, at a
    planned end; not what this report judges by)``, shown "for reference"; empty
    when the metric has no reference interval."""
    ref = m.reference_fixed_horizon
    if ref is None:
        return ""
    return (
        ("fixed horizon: " if m.decided_day is None else "today's fixed horizon: ")
        + f"{pct(ref.relative.effect)} "
        f"{lift_interval(ref.relative)} (valid only when read once, at a planned end; "
        "not what this report judges by)"
    )


def decided_words(m: OnlineMetricResult) -> str:
    """Which day a group-sequential metric's shown numbers are from, once it reached
    its expected size before today (``decided_day``): ``decided on day 9, when it
    reached its expected size: the lift, interval and p-value shown are that day's;
    today's fixed-horizon interval is for reference``; empty otherwise."""
    if m.decided_day is None:
        return ""
    return (
        f"decided on day {m.decided_day}, when it reached its expected size: the lift, "
        "interval and p-value shown are that day's"
        + ("; today's fixed-horizon interval is for reference" if m.reference_fixed_horizon else "")
    )


def prior_text(s: Settings) -> str:
    """The Bayesian view's prior: ``flat``, or under ``--prior history`` each
    metric's learned one (``ctr normal, mean +0.41%, sd 4.90%, from 12 other
    experiments``) and, for a metric with too few, why the flat prior stays."""
    if s.prior != "history":
        return "flat"
    used = [p for p in s.priors if p.normal() is not None]
    shown = [
        f"{p.metric} {p.kind}, mean {pct(p.mean)}, sd {share(p.sd, 2)}, "
        f"from {p.experiments} other experiments"
        for p in used
    ]
    head = (
        "learned from the store's other experiments: " + "; ".join(shown) + "; flat for the others"
        if shown
        else "flat (no metric has enough history)"
    )
    reasons = [p.message for p in s.priors if p.normal() is None and p.message]
    return head + "".join(f"; {r}" for r in reasons)
