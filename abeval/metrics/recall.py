"""Recall at K.

    recall@K = hits@K / R

R is the number of relevant items for the list: in log replay the relevant
items among those shown, in ``evaluate`` the user's relevant held-out items.
Undefined for R = 0: left out (``empty=skip``) or 0 (``empty=zero``).

Reference: Manning, Raghavan and Schütze, *Introduction to Information
Retrieval* (2008), section 8.3; trec_eval ``recall_K``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    return f"({a.hits(spec.k)} / {a.relevant()})"


DEFINITION = MetricDefinition(
    name="recall",
    kind="ranking",
    cutoff="required",
    title="Recall",
    formula="hits@K / R",
    reference="Manning, Raghavan & Schütze 2008, §8.3; trec_eval recall_K",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("r", "rec"),
    constant_when=(
        "recall@K is 1 for every list whose relevant items all lie in its top K: in log "
        "replay the relevant items are among those shown, so K at least the longest "
        "logged list makes it 1 everywhere"
    ),
)
