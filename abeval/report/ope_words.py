"""The words the text and HTML reports give the off-policy estimators' codes
(docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators): each
estimator's assumption and why the headline estimator is the one judged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.formatting import fixed, share

if TYPE_CHECKING:
    from abeval.analysis.ope import OpeDirection, OpeSection

ASSUMPTIONS = {
    "position_based": "position-based clicks",
    "cascade": "cascade clicks",
    "any": "any click model",
}

HEADLINE_REASONS = {
    "given_above": "the source's impressions and the target's probabilities carry step "
    "probabilities, so cascade_dr, valid under cascade clicks, leads",
    "empirical_target": "the target's probabilities are its own (item, position) "
    "frequencies, which have no step probabilities, so snips leads",
    "no_source_given_above": "the source's impressions have no propensity_given_above, "
    "so snips leads",
    "no_target_given_above": "the target probabilities have no probability_given_above, "
    "so snips leads",
    "incomplete_candidates": "the target probabilities lack the candidate items cascade_dr "
    "needs at some positions, so snips leads",
    "cascade_dr_undefined": "cascade_dr is undefined on these logs, so snips leads",
}


def assumption(code: str) -> str:
    return ASSUMPTIONS.get(code, code)


def headline_reason(code: str) -> str:
    return HEADLINE_REASONS.get(code, code)


def status_text(s: OpeSection) -> str:
    """Why a report has no off-policy estimates, in words."""
    return "not requested (--no-ope)" if s.status == "not_requested" else s.message


def weights_summary(d: OpeDirection) -> str:
    """The weight diagnostics of one direction in one line, under which the page
    folds the table and the text shows the positions only with ``--verbose``:
    ``weights: ESS at least 82% of N at every position; largest weight 9.5``."""
    g = d.diagnostics
    shares = [p.ess_share for p in d.positions if p.ess_share is not None]
    largest = [w for w in (g.max_weight, *(p.max_weight for p in d.positions)) if w is not None]
    if shares:
        ess = f"ESS at least {share(min(shares))} of N at every position"
    else:
        ess = f"ESS {share(g.ess_share)} of N"
    top = f"; largest weight {fixed(max(largest), 1)}" if largest else ""
    return f"weights: {ess}{top}"
