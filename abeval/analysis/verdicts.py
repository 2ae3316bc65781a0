"""The report's verdicts: one per primary metric and treatment arm, the detail
below each arm's overall decision (:mod:`abeval.analysis.decision`).

A primary metric's verdict reads its multiple-testing-corrected comparison and
the health checks, in this order: a sample ratio mismatch or a comparison that
could not be made is ``invalid``; a significant improvement is ``ship`` when its
arm's decision is ``ship``, and otherwise takes the arm's decision, with the
reason: the metric is named significantly better, and what blocks the arm (a
guardrail got worse, is underpowered or could not be checked, or another primary
metric got worse) follows without repeating the metric; a
significant harm is ``roll_back``; an interval inside ±target MDE is
``no_effect``; anything else is ``keep_running``. So no card says ship for an arm
whose decision is not ship. Each verdict carries its reason in words, with the
relative lift and its interval (docs/metrics.md#decision).
"""

from __future__ import annotations

from collections.abc import Sequence

from abeval.analysis.decision import margin_words
from abeval.analysis.online_metrics import Catalog
from abeval.analysis.report_model import (
    Decision,
    Health,
    OnlineMetricResult,
    ReportOptions,
    Verdict,
    VerdictResult,
)
from abeval.formatting import NA, interval, pct


def verdicts(
    metrics: Sequence[OnlineMetricResult],
    health: Health,
    o: ReportOptions,
    decisions: Sequence[Decision] = (),
    *,
    catalog: Catalog,
) -> tuple[VerdictResult, ...]:
    """The verdict of every primary metric in ``metrics``, in their order (metrics
    named by their labels in ``catalog``)."""
    by_arm = {d.arm: d for d in decisions}
    out = []
    for m in metrics:
        if m.role == "primary":
            verdict, reason = _verdict(m, by_arm.get(m.arm), health, o, catalog)
            out.append(VerdictResult(metric=m.metric, arm=m.arm, verdict=verdict, reason=reason))
    return tuple(out)


def worse(m: OnlineMetricResult) -> bool:
    """Whether the treatment moved the metric the wrong way (whatever the significance)."""
    effect = m.comparison.absolute.effect or 0.0
    return effect > 0 if m.lower_is_better else effect < 0


def _blocked(d: Decision, catalog: Catalog) -> str:
    """What keeps a significant improvement from shipping, without the improvement:
    the guardrails that could not be checked or are underpowered, else the
    decision's reason."""
    unchecked = [catalog.label(g.metric) for g in d.guardrails if g.status != "ok"]
    if d.decision == "keep_running" and unchecked:
        return f"guardrail {', '.join(unchecked)} could not be checked"
    underpowered = [g for g in d.guardrails if g.guardrail == "underpowered"]
    if d.decision == "keep_running" and underpowered:
        return margin_words(underpowered, catalog)
    return d.reason


def _verdict(
    m: OnlineMetricResult,
    decision: Decision | None,
    health: Health,
    o: ReportOptions,
    catalog: Catalog,
) -> tuple[Verdict, str]:
    rel = m.comparison.relative
    ci = rel.interval
    lift = f"{pct(rel.effect)} {interval(ci)}" if ci else NA
    if health.srm.flagged:
        return "invalid", (
            f"sample ratio mismatch (p = {health.srm.p_value:.2g}): assignment is broken, "
            "so every lift may be biased; find the cause before deciding"
        )
    if m.status == "no_events":  # a team metric waiting for its events
        return "keep_running", m.message
    if m.comparison.status != "ok":
        return "invalid", m.comparison.message
    if m.significant and not worse(m):
        if decision is not None and decision.decision != "ship":
            return decision.decision, (
                f"{m.label} {lift} significantly better after {o.correction} correction, "
                f"but the arm's decision is {decision.decision.replace('_', ' ')}: "
                f"{_blocked(decision, catalog)}"
            )
        return "ship", f"{m.label} {lift}, significant after {o.correction} correction"
    if m.significant:
        return "roll_back", f"{m.label} {lift}: significantly worse"
    if ci is not None and -o.target_mde < ci[0] and ci[1] < o.target_mde:
        return (
            "no_effect",
            f"{m.label} {lift}: the interval rules out lifts beyond ±{o.target_mde:.0%}",
        )
    return "keep_running", (
        f"{m.label} {lift}: not significant and too wide to rule out a {o.target_mde:.0%} effect"
    )
