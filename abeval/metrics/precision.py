"""Precision at K.

    precision@K = hits@K / K

hits@K is the number of relevant items (gain > 0) at ranks 1..K. The divisor is
K even when the list is shorter than K, as trec_eval's ``P_K`` does. Lists with
no relevant item score 0 and stay in the average (docs/metrics.md#precision).

Reference: Manning, Raghavan and Schütze, *Introduction to Information
Retrieval* (2008), section 8.4; trec_eval ``P_K``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    assert spec.k is not None
    return f"({a.hits(spec.k)} / {int(spec.k)})"


DEFINITION = MetricDefinition(
    name="precision",
    kind="ranking",
    cutoff="required",
    title="Precision",
    formula="hits@K / K (K even when the list is shorter)",
    reference="Manning, Raghavan & Schütze 2008, §8.4; trec_eval P_K",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=False,
    per_list=per_list,
    aliases=("p", "prec"),
)
