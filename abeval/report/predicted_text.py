"""The report's predicted lifts as terminal text (docs/metrics.md#recorded-evaluations):
per offline metric and treatment arm, the lift the recorded evaluation predicted
before the test beside the online lift of each primary metric, both with their
intervals, and whether they agree. Nothing when no evaluation is recorded.
"""

from __future__ import annotations

from abeval.analysis.predicted import PredictedLift
from abeval.analysis.report_model import ExperimentReport
from abeval.formatting import interval, pct, terminal_number, when


def _row(p: PredictedLift) -> str:
    return (
        f"  {p.metric:<14} {p.arm:<12} {terminal_number(p.control_value):>9} "
        f"{terminal_number(p.arm_value):>9} {pct(p.predicted.value):>9} "
        f"{interval(p.predicted.ci):>22}  {p.online_label:<20} {pct(p.online.value):>9} "
        f"{interval(p.online.ci):>22}  {p.agreement}"
    )


def predicted_lines(r: ExperimentReport) -> list[str]:
    """The section as lines; none when the report has no recorded evaluation."""
    s = r.predicted
    if s is None or s.status == "none_recorded":
        return []
    lines = [
        "",
        f"Lifts predicted before the test by the recorded offline evaluation "
        f"{s.evaluation_id} ({when(s.recorded_at)}; each model against {s.baseline}'s)",
    ]
    if s.status != "ok":
        return [*lines, f"  {s.message}"]
    lines += [f"!! {w}" for w in s.warnings]
    if s.lifts:
        lines += [
            f"  {'offline metric':<14} {'arm':<12} {'control':>9} {'model':>9} "
            f"{'predicted':>9} {'interval':>22}  {'online metric':<20} {'online':>9} "
            f"{'interval':>22}  agreement",
            *(_row(p) for p in s.lifts),
            "  Recorded from held-out files before the test, not from its clicks: "
            "independent evidence, so agreement is judged (both intervals on the same side "
            "of 0: agree; opposite sides: disagree; else inconclusive).",
        ]
    if s.values_only:
        lines.append(
            f"  recorded with values only (no per-user paired difference, so no predicted "
            f"lift): {', '.join(s.values_only)}"
        )
    return lines
