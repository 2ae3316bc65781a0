"""One overall decision per treatment arm (docs/metrics.md#decision).

The rule reads every primary metric and guardrail of the arm, after the
multiple-testing correction, and the health checks. The first that applies wins:

1. ``invalid``: the sample ratio test flagged a mismatch, or a primary metric's
   comparison could not be made (its status is not ``ok``);
2. ``roll_back``: a primary metric or a guardrail is significantly worse;
3. ``ship``: at least one primary metric is significantly better (none is
   worse and no guardrail is worse, by 2) and every guardrail could be checked;
4. ``no_effect``: no primary metric is significant and each one either has its
   interval inside ±target MDE or reached the planned power for the target MDE;
5. ``keep_running``: anything else.

:func:`decide` is the rule on its inputs (:class:`DecisionInput`);
:func:`decisions` gathers those inputs from the report's metric results.
"""

from __future__ import annotations

from collections.abc import Sequence

from abeval.analysis.online_metrics import METRICS, direction
from abeval.analysis.report_model import (
    Decision,
    DecisionInput,
    Direction,
    Health,
    MetricResult,
    PowerInfo,
    ReportOptions,
    Verdict,
)
from abeval.formatting import interval, pct


def decisions(
    metrics: Sequence[MetricResult],
    health: Health,
    power: Sequence[PowerInfo],
    o: ReportOptions,
) -> tuple[Decision, ...]:
    """The decision of every treatment arm in ``metrics``, in the order the arms first appear."""
    detectable = {(p.metric, p.arm): p.detectable.mde_relative for p in power}
    arms = list(dict.fromkeys(m.arm for m in metrics))
    out = []
    for arm in arms:
        primaries = tuple(
            metric_input(m, o.target_mde, detectable.get((m.metric, arm)))
            for m in metrics
            if m.arm == arm and m.role == "primary"
        )
        guardrails = tuple(
            metric_input(m, o.target_mde) for m in metrics if m.arm == arm and m.role == "guardrail"
        )
        decision, reason = decide(primaries, guardrails, health.srm.flagged, o.target_mde)
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
            )
        )
    return tuple(out)


def metric_input(
    m: MetricResult, target_mde: float, detectable: float | None = None
) -> DecisionInput:
    """What the rule reads of one metric result."""
    rel = m.comparison.relative
    ci = rel.interval
    moved: Direction | None = None
    if m.comparison.status == "ok":
        sign = direction(m.comparison)
        if METRICS[m.metric].lower_is_better:
            sign = -sign
        moved = "better" if sign > 0 else "worse" if sign < 0 else "flat"
    within = None if ci is None else -target_mde < ci[0] and ci[1] < target_mde
    return DecisionInput(
        metric=m.metric,
        role=m.role,
        status=m.comparison.status,
        direction=moved,
        relative_effect=rel.effect,
        interval=ci,
        within_target=within if m.role == "primary" else None,
        detectable=detectable,
    )


def decide(
    primaries: Sequence[DecisionInput],
    guardrails: Sequence[DecisionInput],
    srm_flagged: bool,
    target_mde: float,
) -> tuple[Verdict, str]:
    """The rule of the module docstring: a decision and its reason in words."""
    if srm_flagged:
        return "invalid", "sample ratio mismatch: the arms are not comparable; find the cause"
    if not primaries:
        return "invalid", "no primary metric to decide on"
    broken = [p for p in primaries if p.status != "ok"]
    if broken:
        return "invalid", "could not compare " + _names(broken, status=True)
    worse = [m for m in (*primaries, *guardrails) if m.direction == "worse"]
    if worse:
        return "roll_back", "significantly worse: " + _names(worse, lift=True)
    better = [p for p in primaries if p.direction == "better"]
    unchecked = [g for g in guardrails if g.status != "ok"]
    if better and unchecked:
        return "keep_running", (
            f"{_names(better, lift=True)} significantly better, but guardrail "
            f"{_names(unchecked, status=True)} could not be checked"
        )
    if better:
        return "ship", (
            f"significantly better: {_names(better, lift=True)}; "
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
        f"no significant change yet; {_names(open_, lift=True)} cannot rule out a "
        f"{target_mde:.0%} lift and the test has not reached its planned power"
    )


def _powered(p: DecisionInput, target_mde: float) -> bool:
    return p.detectable is not None and p.detectable <= target_mde


def _label(name: str) -> str:
    return METRICS[name].label if name in METRICS else name


def _names(items: Sequence[DecisionInput], *, lift: bool = False, status: bool = False) -> str:
    parts = []
    for m in items:
        text = _label(m.metric)
        if lift:
            text += f" {pct(m.relative_effect)} {interval(m.interval)}"
        if status:
            text += f" ({m.status})"
        parts.append(text)
    return ", ".join(parts)
