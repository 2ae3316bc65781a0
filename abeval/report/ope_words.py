"""The words the text and HTML reports give the off-policy estimators' codes
(docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators): each
estimator's assumption and why the headline estimator is the one judged."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abeval.analysis.ope import OpeSection

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
