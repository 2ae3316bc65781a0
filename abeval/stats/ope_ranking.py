"""The off-policy estimators of a ranked list's click-through rate
(docs/metrics.md#off-policy-estimates): which per-user sums each one is a ratio
of, the click model under which each is unbiased, and the weights its
diagnostics read.

Item-position estimators (``ips``, ``snips``, ``capped_ips``, ``ncis``) weigh
each impression by π_target(item, position) / propensity: unbiased when a click
at k depends only on the item at k (position-based). The step estimators over
the ranked list (docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators)
weigh by products of step probabilities down the list: ``rips``, ``snrips`` and
``cascade_dr`` under the cascade model, ``sips`` over the whole list (a slate).
The store's SQL computes the per-user sums (:mod:`abeval.store.sql.ope_parts`,
:mod:`abeval.store.sql.ope_cascade`); :mod:`abeval.stats.ope` turns them into
estimates with delta-method intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

EstimatorName = Literal[
    "ips", "snips", "capped_ips", "ncis", "rips", "snrips", "sips", "cascade_dr"
]

#: estimator → (numerator, denominator) per-user variables, for the estimators
#: that are one ratio of two sums (``snrips`` is a sum of ratios: :func:`snrips_terms`).
ESTIMATORS: Mapping[str, tuple[str, str]] = {
    "ips": ("wc", "n"),
    "snips": ("wc", "w"),
    "capped_ips": ("kc", "n"),
    "ncis": ("kc", "k"),
}

#: The ratio estimators over the step probabilities (cascade and whole list).
STEP_ESTIMATORS: Mapping[str, tuple[str, str]] = {
    "rips": ("rc", "n"),
    "sips": ("sc", "n"),
    "cascade_dr": ("dr", "n"),
}

#: The click model under which each estimator is unbiased: ``position_based``
#: (a click at k depends only on the item at k), ``cascade`` (on the items at
#: and above k), ``any`` (on the whole list).
ASSUMPTIONS: Mapping[str, str] = {
    "ips": "position_based",
    "snips": "position_based",
    "capped_ips": "position_based",
    "ncis": "position_based",
    "rips": "cascade",
    "snrips": "cascade",
    "cascade_dr": "cascade",
    "sips": "any",
}

#: Per estimator: the per-user sum of its weights and of its weighted clicks,
#: which its diagnostics over users read.
USER_WEIGHTS: Mapping[str, tuple[str, str]] = {
    **dict.fromkeys(("ips", "snips"), ("w", "wc")),
    **dict.fromkeys(("capped_ips", "ncis"), ("k", "kc")),
    **dict.fromkeys(("rips", "snrips", "cascade_dr"), ("r", "rc")),
    "sips": ("s", "sc"),
}

#: Per estimator that is one ratio, the per-user variables of its CTR and of its
#: predicted lift (× Σn/Σc): the store adds up the products of three of them
#: (:func:`abeval.stats.skew_interval.triples`) for the skewness of the per-user
#: influence values and Hall's interval (docs/metrics.md#ope-intervals). ``snrips``,
#: a sum of ratios over up to ten position groups, would need thousands: it has none.
INFLUENCE_VARIABLES: Mapping[str, tuple[str, ...]] = {
    name: (num, den, "n", "c") for name, (num, den) in {**ESTIMATORS, **STEP_ESTIMATORS}.items()
}

#: A product of per-user means, each variable to its power (one term of
#: :func:`abeval.stats.ope.monomials`).
Term = Mapping[str, int]


def snrips_terms(groups: Sequence[int]) -> tuple[Term, ...]:
    """Self-normalised cascade IPS, normalised per position group g:
    Σ_g (Σ W·c at g / Σ W at g) · (impressions at g) / (all impressions), with
    the per-user variables ``a<g>``, ``b<g>``, ``n<g>``."""
    return tuple({f"a{g}": 1, f"b{g}": -1, f"n{g}": 1, "n": -1} for g in groups)
