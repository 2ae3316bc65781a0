"""What ``reports/_predicted.html.j2`` reads: the lifts a recorded offline
evaluation predicted (docs/metrics.md#recorded-evaluations) with the page's
presentation decisions, the colour and words of each agreement. Nothing here
computes a statistic.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from abeval.analysis.predicted import PredictedLift, PredictedSection
from abeval.analysis.report_model import ExperimentReport
from abeval.report.tones import AGREEMENT_STATES


@dataclass(frozen=True)
class PredictedRow:
    """One predicted lift and its agreement's state pill (kind, text)."""

    result: PredictedLift
    state: tuple[str, str]


@dataclass(frozen=True)
class PredictedContext:
    """The section: the result and one :class:`PredictedRow` per predicted lift."""

    section: PredictedSection
    rows: tuple[PredictedRow, ...]
    #: Why there are no lifts, with the fix, in words ("" when there are).
    status: str = ""


def predicted_context(report: ExperimentReport) -> PredictedContext | None:
    """None when nothing is recorded (the template then leaves the section out)."""
    s = report.predicted
    if s is None or s.status == "none_recorded":
        return None
    rows = tuple(PredictedRow(p, AGREEMENT_STATES[p.agreement]) for p in s.lifts)
    return PredictedContext(s, rows, "" if s.status == "ok" else status_text(s))


def status_text(s: PredictedSection) -> str:
    """The section's status in words, with the fix where the user has one."""
    if s.status == "other_baseline" and s.baseline is not None:
        return (
            f"{s.message}; record the evaluation again after `abeval experiment set "
            f"--control`, or report with --control {shlex.quote(s.baseline)}"
        )
    return s.message
