"""What ``reports/_ope.html.j2`` reads: the report's off-policy estimates
(docs/metrics.md#off-policy-estimates) with the page's presentation decisions,
the colour of an agreement and how π_target was obtained, in words. Nothing
here computes a statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

from abeval.analysis.ope import OpeDirection, OpeSection
from abeval.analysis.report_model import ExperimentReport
from abeval.report.ope_words import assumption, headline_reason
from abeval.report.tones import AGREEMENT_STATES as _AGREEMENT

_SOURCES = {
    "file": "the target's probabilities from --target-propensities",
    "empirical": "the target arm's own frequency of each (item, position), context-free",
}


@dataclass(frozen=True)
class OpeDirectionView:
    """One direction: the result, how π_target was obtained, the agreement's
    state pill (kind, text), each estimator's assumption in words (by
    estimator) and why the headline estimator leads."""

    result: OpeDirection
    probabilities: str
    state: tuple[str, str]
    assumptions: dict[str, str]
    headline_why: str


@dataclass(frozen=True)
class OpeContext:
    """The section: the result and one :class:`OpeDirectionView` per direction."""

    section: OpeSection
    directions: tuple[OpeDirectionView, ...]


def ope_context(report: ExperimentReport) -> OpeContext | None:
    """None when the report has no OPE field (the template then leaves the section out)."""
    s = report.ope
    if s is None:
        return None
    views = tuple(
        OpeDirectionView(
            d,
            _SOURCES[d.target_probabilities],
            _AGREEMENT[d.agreement],
            {e.estimator: assumption(e.assumption) for e in d.estimates},
            headline_reason(d.headline_reason),
        )
        for d in s.directions
    )
    return OpeContext(s, views)
