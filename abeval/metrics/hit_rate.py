"""Hit rate at K.

    hit_rate@K = 1 if hits@K > 0 else 0

The share of lists with at least one relevant item in the top K. Lists with no
relevant item score 0 and stay in the average (docs/metrics.md#hit_rate).

Reference: Deshpande and Karypis, "Item-based top-N recommendation algorithms",
ACM TOIS 22(1), 2004 (hit-rate, HR).
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    return f"(CASE WHEN {a.hits(spec.k)} > 0 THEN 1.0 ELSE 0.0 END)"


DEFINITION = MetricDefinition(
    name="hit_rate",
    kind="ranking",
    cutoff="required",
    title="Hit rate",
    formula="1 if hits@K > 0 else 0",
    reference="Deshpande & Karypis 2004 (ACM TOIS 22(1))",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=False,
    per_list=per_list,
    aliases=("hr", "hit", "hits", "hitrate", "success"),
)
