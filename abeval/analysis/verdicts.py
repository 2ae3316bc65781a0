"""The report's verdicts: one per primary metric and treatment arm.

A primary metric's verdict reads its multiple-testing-corrected comparison, the
guardrails and the health checks, in this order: a sample ratio mismatch or a
comparison that could not be made is ``invalid``; a significant improvement is
``ship`` unless a guardrail got significantly worse (then ``roll_back``); a
significant harm is ``roll_back``; an interval inside ±target MDE is
``no_effect``; anything else is ``keep_running``. Each verdict carries its
reason in words, with the relative lift and its interval.
"""

from __future__ import annotations

from abeval.analysis.online_metrics import METRICS
from abeval.analysis.report_model import (
    Health,
    MetricResult,
    ReportOptions,
    Verdict,
    VerdictResult,
)
from abeval.formatting import NA, interval, pct


def verdicts(
    metrics: list[MetricResult], health: Health, o: ReportOptions
) -> tuple[VerdictResult, ...]:
    """The verdict of every primary metric in ``metrics``, in their order."""
    harmed = [m for m in metrics if m.role == "guardrail" and m.significant and worse(m)]
    out = []
    for m in metrics:
        if m.role == "primary":
            verdict, reason = _verdict(m, harmed, health, o)
            out.append(VerdictResult(metric=m.metric, arm=m.arm, verdict=verdict, reason=reason))
    return tuple(out)


def worse(m: MetricResult) -> bool:
    """Whether the treatment moved the metric the wrong way (whatever the significance)."""
    effect = m.comparison.absolute.effect or 0.0
    return effect > 0 if METRICS[m.metric].lower_is_better else effect < 0


def _verdict(
    m: MetricResult, harmed: list[MetricResult], health: Health, o: ReportOptions
) -> tuple[Verdict, str]:
    rel = m.comparison.relative
    ci = rel.interval
    lift = f"{pct(rel.effect)} {interval(ci)}" if ci else NA
    if health.srm.flagged:
        return "invalid", (
            f"sample ratio mismatch (p = {health.srm.p_value:.2g}): assignment is broken, "
            "so every lift may be biased; find the cause before deciding"
        )
    if m.comparison.status != "ok":
        return "invalid", m.comparison.message
    if m.significant and not worse(m):
        if harmed:
            names = ", ".join(f"{g.label} ({g.arm})" for g in harmed)
            return (
                "roll_back",
                f"{m.label} {lift} improved but guardrail {names} got significantly worse",
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
