"""What ``reports/_ope.html.j2`` reads: the report's off-policy estimates
(docs/metrics.md#off-policy-estimates) with the page's presentation decisions,
the colour of an agreement and how π_target was obtained, in words. Nothing
here computes a statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

from abeval.analysis.ope import OpeDirection, OpeSection
from abeval.analysis.report_model import ExperimentReport
from abeval.formatting import interval, pct
from abeval.report.ope_words import assumption, headline_reason, status_text, weights_summary
from abeval.report.tones import AGREEMENT_STATES as _AGREEMENT
from abeval.stats.consistency import LiftDifference

_SOURCES = {
    "file": "the target's probabilities from --target-propensities",
    "recorded": "the target's probabilities recorded with the experiment",
    "empirical": "the target arm's own frequency of each (item, position), context-free",
}
#: What a post-hoc estimate is (``evidence`` = ``post_hoc``).
POST_HOC = (
    "post-hoc: uses the target arm's own impressions; assumes its lists do not depend on the user"
)


def supply_sentence(command: str) -> str:
    """How to turn post-hoc estimates into predictions."""
    return f"to predict instead, record the target policy's probabilities: {command}"


def varying_target_sentence(d: OpeDirection, command: str | None) -> str:
    """The warning of a post-hoc direction whose target's own logged propensities
    vary between requests (``varying_target``); "" without one."""
    v = d.varying_target
    if v is None:
        return ""
    record = f", or record them: {command}" if command else ""
    return (
        f"{d.target} from {d.source}'s logs: {d.target}'s own logged probabilities vary between "
        f"requests for {v.share:.0%} of (item, position) pairs ({v.varying:,} of {v.pairs:,}), "
        f"so its context-free frequency stands in for probabilities that depend on the "
        f"request: the estimate assumes clicks do not depend on what {d.target}'s lists vary "
        f"with (the user, the time); to predict instead, give {d.target}'s probabilities with "
        f"--target-propensities FILE{record}"
    )


def difference_sentence(d: LiftDifference) -> str:
    """``difference -1.20% [-5.00%, +2.60%], z -0.63: consistent at α = 0.05``."""
    if d.verdict is None:
        return f"difference {pct(d.difference)} ({d.message})"
    return (
        f"difference {pct(d.difference)} {interval(d.ci)}, z {d.z:+.2f}: {d.verdict} at "
        f"α = {d.alpha:g}"
    )


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
    #: The difference from the online lift and its verdict, in words ("" without one).
    difference: str = ""
    #: The weight diagnostics in one line, above the folded table (ope_words).
    weights: str = ""


@dataclass(frozen=True)
class OpeContext:
    """The section: the result and one :class:`OpeDirectionView` per direction."""

    section: OpeSection
    directions: tuple[OpeDirectionView, ...]
    #: How to supply target probabilities ("" when they are recorded).
    supply: str = ""
    #: Per post-hoc direction whose target's logged propensities vary, its warning.
    varying: tuple[str, ...] = ()
    #: Why there are no estimates, in words ("" when there are).
    status: str = ""


def ope_context(report: ExperimentReport) -> OpeContext | None:
    """None when the report has no OPE field (the template then leaves the section out)."""
    s = report.ope
    if s is None:
        return None
    views = tuple(
        OpeDirectionView(
            d,
            _SOURCES[d.target_probabilities]
            + (f" ({POST_HOC})" if d.evidence == "post_hoc" else ""),
            _AGREEMENT[d.agreement],
            {e.estimator: assumption(e.assumption) for e in d.estimates},
            headline_reason(d.headline_reason),
            difference_sentence(d.difference) if d.difference is not None else "",
            weights_summary(d),
        )
        for d in s.directions
    )
    supply = supply_sentence(s.supply_command) if s.supply_command else ""
    varying = varying_sentences(s)
    return OpeContext(s, views, supply, varying, "" if s.status == "ok" else status_text(s))


def varying_sentences(s: OpeSection) -> tuple[str, ...]:
    """:func:`varying_target_sentence` of every direction that has one."""
    found = (varying_target_sentence(d, s.supply_command) for d in s.directions)
    return tuple(w for w in found if w)
