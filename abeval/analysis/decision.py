"""One overall decision per treatment arm (docs/metrics.md#decision).

The rule reads every primary metric and guardrail of the arm, after the
multiple-testing correction, and the health checks. The first that applies wins:

1. ``invalid``: the sample ratio test flagged a mismatch, or a primary metric's
   comparison could not be made (its status is not ``ok``);
2. ``roll_back``: a primary metric is significantly worse, or a guardrail is
   (with a margin: its harm is shown beyond the margin, the whole interval past
   it; a guardrail worse but not past its margin is ``underpowered`` or passed);
   then ``keep_running`` while a primary team metric's events have not arrived
   (``no_events``): it waits for them rather than being invalid;
3. ``ship``: at least one primary metric is significantly better (none is
   worse and no guardrail is worse, by 2), every guardrail could be checked
   and no guardrail with a margin is underpowered (its interval reaches past
   the margin without being significantly worse);
4. ``no_effect``: no primary metric is significant and each one either has its
   interval inside ±target MDE or reached the planned power for the target MDE;
5. ``keep_running``: anything else.

What the rule reads depends on the plan (docs/metrics.md#decision): with
``--sequential``, the always-valid intervals; with no plan recorded, the
group-sequential intervals of an O'Brien–Fleming-type α-spending design over a
look at the end of every day so far, up to the expected size (the users the
primary metrics need for the target MDE, else the traffic so far over
:data:`HORIZON_DAYS`), so a team may look every day; with a plan, the
fixed-horizon intervals at the planned look (read on later days, the data of
that look: the decision made there stands), and before it only 1 (anything
else is ``keep_running``, with how far the plan is). A look's data, read on a
later day, are what a report through that day reads (``at_look``: CUPED and
caps as that report has them), not the daily series' cumulative point, which
carries no pre-period.

:func:`decide` is the rule on its inputs (:class:`DecisionInput`);
:func:`decisions` gathers those inputs from the report's metric results, and
:func:`judged_results` makes the results the decision reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import date

from abeval.analysis.comparisons import adjust_families, metric_results
from abeval.analysis.online_metrics import Catalog, direction
from abeval.analysis.report_model import (
    Decision,
    DecisionBasis,
    DecisionInput,
    Direction,
    GuardrailState,
    Health,
    OnlineMetricResult,
    PlanProgress,
    PowerInfo,
    ReportOptions,
    Role,
    Verdict,
)
from abeval.analysis.team_metrics import no_events
from abeval.formatting import interval, pct, share
from abeval.stats.results import Comparison
from abeval.stats.spending import information_fractions
from abeval.store.sql.online_variables import Moments

#: Without a plan, and without what the target MDE needs, the expected size is
#: the traffic so far projected to this many days.
HORIZON_DAYS = 28


def judged_results(
    comparisons: list[OnlineMetricResult],
    moments: dict[str, Moments],
    daily: Sequence[tuple[str, dict[str, Moments]]],
    control: str,
    treatments: list[str],
    o: ReportOptions,
    catalog: Catalog,
    power: Sequence[PowerInfo],
    days: int,
    at_look: Callable[[int], Mapping[str, Moments]] | None = None,
) -> tuple[list[OnlineMetricResult], DecisionBasis, PlanProgress | None]:
    """What the decision reads (module docstring): the report's ``comparisons``, or
    with no plan the group-sequential ones over the looks of ``daily`` (the
    cumulative moments at the end of each day); the basis and the plan's progress
    after ``days`` days. A look decided on an earlier day reads ``at_look(i)``,
    the moments of a report through day ``daily[i]`` (default: the series' own)."""
    through = at_look or (lambda i: daily[i][1])
    users = sum(m.n for m in moments.values())
    progress = plan_progress(o, days, users)
    basis = decision_basis(o, progress)
    if basis == "fixed_plan_reached" and progress is not None:
        look = planned_look(daily, o)
        if look is not None and look[0] < days:
            # past the planned look: the decision stays the one made there
            frozen = metric_results(dict(through(look[1])), control, treatments, o, catalog)[0]
            return frozen, basis, replace(progress, decided_day=look[0])
    if basis != "sequential_no_plan" or users <= 0:
        return comparisons, basis, progress
    default = expected_users(power, users, days)
    needs = {
        (p.metric, p.arm): float(p.needed_for_target.total_users)
        for p in power
        if p.needed_for_target.total_users is not None
    }
    counts = [sum(m.n for m in arms.values()) for _, arms in daily]

    def size(r: OnlineMetricResult) -> float:
        return needs.get((r.metric, r.arm), default)

    def stop(r: OnlineMetricResult) -> int | None:
        """The day (index in ``daily``) that first reached the result's expected
        size, when it is before the latest: its last look spent the last of α."""
        full = next((i for i, n in enumerate(counts) if n >= size(r)), None)
        if full is not None and full < len(counts) - 1 and 0 < counts[full] < users:
            return full
        return None

    def looks(r: OnlineMetricResult) -> tuple[float, ...]:
        i = stop(r)
        seen = daily if i is None else daily[: i + 1]
        return information_fractions(look_users(seen, users if i is None else counts[i]), size(r))

    then: dict[int, list[OnlineMetricResult]] = {}
    picked = []
    for r in comparisons:
        i = stop(r)
        if i is None:
            picked.append(r)
            continue
        # past its expected size: the result of the day that reached it stands
        if i not in then:
            then[i] = metric_results(dict(through(i)), control, treatments, o, catalog)[0]
        reached = next(x for x in then[i] if (x.metric, x.arm) == (r.metric, r.arm))
        picked.append(replace(reached, decided_day=_day_number(daily, i)))
    return adjust_families(picked, o, looks), basis, progress


def planned_look(
    daily: Sequence[tuple[str, dict[str, Moments]]], o: ReportOptions
) -> tuple[int, int] | None:
    """The planned look: the first day of ``daily`` (ISO days, cumulative moments)
    at which every part of the plan is reached, as (day number from the first day,
    index in ``daily``); None when the series does not reach it."""
    if not daily:
        return None
    first = date.fromisoformat(daily[0][0][:10])
    for i, (day, arms) in enumerate(daily):
        number = (date.fromisoformat(day[:10]) - first).days + 1
        users = sum(m.n for m in arms.values())
        progress = plan_progress(o, number, users)
        if progress is not None and progress.reached:
            return number, i
    return None


def _day_number(daily: Sequence[tuple[str, dict[str, Moments]]], i: int) -> int:
    """The day number (1 = the first day of ``daily``) of ``daily[i]``."""
    first = date.fromisoformat(daily[0][0][:10])
    return (date.fromisoformat(daily[i][0][:10]) - first).days + 1


def look_users(daily: Sequence[tuple[str, dict[str, Moments]]], users: int) -> tuple[int, ...]:
    """The users (all arms) at the end of each day, then ``users`` (the last look)."""
    seen = [sum(m.n for m in day.values()) for _, day in daily]
    return (*(n for n in seen if 0 < n < users), users)


def expected_users(power: Sequence[PowerInfo], users: int, days: int) -> float:
    """The size a design without a plan spends its α up to: the most users a primary
    metric needs for the target MDE (``power``), else the traffic so far projected
    to :data:`HORIZON_DAYS` days."""
    needs = [p.needed_for_target.total_users for p in power]
    known = [n for n in needs if n is not None]
    if known:
        return float(max(known))
    return float(users * max(1.0, HORIZON_DAYS / max(days, 1)))


def decisions(
    metrics: Sequence[OnlineMetricResult],
    health: Health,
    power: Sequence[PowerInfo],
    o: ReportOptions,
    catalog: Catalog,
    *,
    basis: DecisionBasis = "fixed_plan_reached",
    progress: PlanProgress | None = None,
) -> tuple[Decision, ...]:
    """The decision of every treatment arm in ``metrics``, in the order the arms first
    appear; ``metrics`` are the results the decision reads (:func:`decision_basis`),
    named in the reasons by their labels in the store's ``catalog``."""
    detectable = {(p.metric, p.arm): p.detectable.mde_relative for p in power}
    arms = list(dict.fromkeys(m.arm for m in metrics))
    out = []
    for arm in arms:
        primaries = tuple(
            metric_input(m, o.target_mde, detectable.get((m.metric, arm)))
            for m in metrics
            if m.arm == arm and m.role == "primary"
        )
        # A primary metric named among the guardrails is judged as one too.
        guardrails = tuple(
            metric_input(m, o.target_mde, margin=o.margin(m.metric), role="guardrail")
            for m in metrics
            if m.arm == arm
            and (m.role == "guardrail" or (m.role == "primary" and m.metric in o.guardrails))
        )
        decision, reason = gate(
            decide(primaries, guardrails, health.srm.flagged, o.target_mde, catalog),
            basis,
            progress,
        )
        if decision == "invalid" and health.srm.flagged and health.srm.p_value is not None:
            reason = f"{reason} (p = {health.srm.p_value:.2g})"
        out.append(
            Decision(
                arm=arm,
                decision=decision,
                reason=reason,
                srm_flagged=health.srm.flagged,
                target_mde=o.target_mde,
                primaries=primaries,
                guardrails=guardrails,
                basis=basis,
                progress=progress,
            )
        )
    return tuple(out)


def gate(
    decided: tuple[Verdict, str], basis: DecisionBasis, progress: PlanProgress | None
) -> tuple[Verdict, str]:
    """The rule's decision, or ``keep_running`` with how far the plan is when the
    recorded plan is not reached (an ``invalid`` decision stands)."""
    if basis == "plan_not_reached" and decided[0] != "invalid" and progress is not None:
        return "keep_running", too_early(progress)
    if progress is not None and progress.decided_day is not None and decided[0] != "invalid":
        return decided[0], (
            f"{decided[1]} (as of day {progress.decided_day}, the planned look: the decision "
            "made there stands, later days do not change it)"
        )
    return decided


def decision_basis(o: ReportOptions, progress: PlanProgress | None) -> DecisionBasis:
    """What the decision reads (module docstring): ``progress`` is None when no
    plan is recorded."""
    if o.sequential:
        return "sequential_requested"
    if progress is None:
        return "sequential_no_plan"
    return "fixed_plan_reached" if progress.reached else "plan_not_reached"


def plan_progress(o: ReportOptions, days: int, users: int) -> PlanProgress | None:
    """How far ``days`` and ``users`` are into the recorded plan; None without one."""
    if o.plan_users is None and o.plan_days is None:
        return None
    reached = (o.plan_days is None or days >= o.plan_days) and (
        o.plan_users is None or users >= o.plan_users
    )
    return PlanProgress(
        days=days, users=users, plan_days=o.plan_days, plan_users=o.plan_users, reached=reached
    )


def too_early(p: PlanProgress) -> str:
    """``day 7 of 14, 48% of the planned users; an early read needs --sequential``."""
    parts = []
    if p.plan_days is not None:
        parts.append(f"day {p.days} of {p.plan_days}")
    if p.plan_users is not None:
        parts.append(f"{p.users / p.plan_users:.0%} of the planned users")
    return f"{', '.join(parts)}; an early read needs --sequential"


def metric_input(
    m: OnlineMetricResult,
    target_mde: float,
    detectable: float | None = None,
    *,
    margin: float | None = None,
    role: Role | None = None,
) -> DecisionInput:
    """What the rule reads of one metric result (a guardrail's ``margin``: the
    largest relative harm it may show), in the metric's direction, which the result
    carries, and in its role or in ``role``. A team metric whose events have not
    arrived reads ``no_events``: not compared, waited for rather than invalid."""
    read = comparison_input(
        m.metric,
        role or m.role,
        m.comparison,
        target_mde,
        detectable,
        margin=margin,
        lower_is_better=m.lower_is_better,
    )
    if m.status != "no_events":
        return read
    unchecked: GuardrailState | None = "unchecked" if read.guardrail else None
    return replace(read, status="no_events", direction=None, guardrail=unchecked)


def comparison_input(
    metric: str,
    role: Role,
    comparison: Comparison,
    target_mde: float,
    detectable: float | None = None,
    *,
    margin: float | None = None,
    lower_is_better: bool,
) -> DecisionInput:
    """What the rule reads of one (corrected) comparison of ``metric`` in ``role``
    (``lower_is_better``: the metric's direction)."""
    rel = comparison.relative
    # once adjusted, the adjusted interval, even when unbounded (None)
    ci = rel.interval
    moved: Direction | None = None
    if comparison.status == "ok":
        sign = direction(comparison)
        if lower_is_better:
            sign = -sign
        moved = "better" if sign > 0 else "worse" if sign < 0 else "flat"
    within = None if ci is None else -target_mde < ci[0] and ci[1] < target_mde
    harm = None if ci is None else (ci[1] if lower_is_better else -ci[0])
    least = None if ci is None else (ci[0] if lower_is_better else -ci[1])
    guardrail = role == "guardrail"
    return DecisionInput(
        metric=metric,
        role=role,
        status=comparison.status,
        direction=moved,
        relative_effect=rel.effect,
        interval=ci,
        within_target=within if role == "primary" else None,
        detectable=detectable,
        margin=margin if guardrail else None,
        largest_harm=harm if guardrail else None,
        guardrail=guardrail_state(moved, harm, margin, least) if guardrail else None,
    )


def guardrail_state(
    moved: Direction | None,
    harm: float | None,
    margin: float | None,
    least: float | None = None,
) -> GuardrailState:
    """A guardrail's reading: worse (without a margin, significantly worse; with
    one, a harm beyond the margin shown: even the interval's best end, ``least``
    as a harm, is past it), unchecked, not shown within its margin
    (underpowered), or passed."""
    if margin is not None:
        if least is not None and least > margin:
            return "worse"
    elif moved == "worse":
        return "worse"
    if moved is None or harm is None:
        return "unchecked"
    if margin is not None and harm > margin:
        return "underpowered"
    return "passed"


def decide(
    primaries: Sequence[DecisionInput],
    guardrails: Sequence[DecisionInput],
    srm_flagged: bool,
    target_mde: float,
    catalog: Catalog,
) -> tuple[Verdict, str]:
    """The rule of the module docstring: a decision and its reason in words, the
    metrics named by their labels in ``catalog``."""
    if srm_flagged:
        return "invalid", "sample ratio mismatch: the arms are not comparable; find the cause"
    if not primaries:
        return "invalid", "no primary metric to decide on"
    broken = [p for p in primaries if p.status not in ("ok", "no_events")]
    if broken:
        return "invalid", "could not compare " + _names(broken, catalog)
    worse = [
        *(p for p in primaries if p.direction == "worse"),
        *(g for g in guardrails if g.guardrail == "worse"),
    ]
    worse = [m for i, m in enumerate(worse) if m.metric not in {w.metric for w in worse[:i]}]
    if worse:
        return "roll_back", "significantly worse: " + _names(worse, catalog, lift=True)
    waiting = [no_events(p.metric, catalog) for p in primaries if p.status == "no_events"]
    if waiting:
        return "keep_running", "; ".join(w for w in waiting if w)
    better = [p for p in primaries if p.direction == "better"]
    unchecked = [g for g in guardrails if g.status != "ok"]
    if better and unchecked:
        return "keep_running", (
            f"{_names(better, catalog, lift=True)} significantly better, but guardrail "
            f"{_names(unchecked, catalog)} could not be checked"
        )
    underpowered = [g for g in guardrails if g.guardrail == "underpowered"]
    if better and underpowered:
        return "keep_running", (
            f"{_names(better, catalog, lift=True)} significantly better, "
            f"but {margin_words(underpowered, catalog)}"
        )
    if better:
        return "ship", (
            f"significantly better: {_names(better, catalog, lift=True)}; "
            "no primary metric or guardrail significantly worse"
        )
    settled = [p for p in primaries if p.within_target or _powered(p, target_mde)]
    if len(settled) == len(primaries):
        return "no_effect", (
            f"no significant change; every primary metric either rules out lifts beyond "
            f"±{target_mde:.0%} or reached the planned power for ±{target_mde:.0%}"
        )
    open_ = [p for p in primaries if p not in settled]
    return "keep_running", (
        f"no significant change yet; {_names(open_, catalog, lift=True)} cannot rule out a "
        f"{target_mde:.0%} lift and the test has not reached its planned power"
    )


def margin_words(items: Sequence[DecisionInput], catalog: Catalog) -> str:
    """Why each guardrail of ``items`` (underpowered) blocks a ship, in words."""
    return "; ".join(
        f"guardrail {catalog.label(g.metric)} is underpowered: its interval allows a harm of "
        f"{share(g.largest_harm, 2)}, past its {share(g.margin, 2)} margin"
        for g in items
    )


def _powered(p: DecisionInput, target_mde: float) -> bool:
    return p.detectable is not None and p.detectable <= target_mde


def _names(
    items: Sequence[DecisionInput],
    catalog: Catalog,
    *,
    lift: bool = False,
) -> str:
    parts = []
    for m in items:
        text = catalog.label(m.metric)
        if lift:  # an adjusted interval without an end is said so (the tables' word)
            shown = "unbounded" if m.interval is None else interval(m.interval)
            text += f" {pct(m.relative_effect)} {shown}"
        parts.append(text)
    return ", ".join(parts)
