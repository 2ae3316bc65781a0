"""Mean reciprocal rank (at K).

    rr@K = 1 / (rank of the first relevant item) if that rank ≤ K, else 0

``mrr`` without a cutoff uses the whole list (trec_eval ``recip_rank``). The
mean is over lists, then users, then groups. Undefined for R = 0: left out
(``empty=skip``) or 0 (``empty=zero``).

Reference: Voorhees, "The TREC-8 Question Answering Track Report" (1999);
trec_eval ``recip_rank``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    first = a.first_relevant()
    within = f"{first} IS NOT NULL"
    if spec.k is not None:
        within += f" AND {first} <= {int(spec.k)}"
    return f"(CASE WHEN {within} THEN 1 / {first} ELSE 0.0 END)"


DEFINITION = MetricDefinition(
    name="mrr",
    kind="ranking",
    cutoff="optional",
    title="Mean reciprocal rank",
    formula="1 / (rank of the first relevant item ≤ K), else 0",
    reference="Voorhees 1999 (TREC-8 QA); trec_eval recip_rank",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("rr", "recip_rank", "reciprocal_rank"),
)
