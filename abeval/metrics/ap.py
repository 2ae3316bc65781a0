"""Average precision at K.

    ap@K = Σ_{i ≤ K, rel(i) > 0} precision@i / D,   precision@i = hits@i / i

The denominator D is a convention (docs/metrics.md#ap):

- ``R`` (default): the number of relevant items for the list, as trec_eval's
  ``map_cut_K`` (and ``map`` over the whole list) does;
- ``min_rk``: min(R, K), as Spark's ``RankingMetrics``, Microsoft recommenders'
  ``map_at_k``, RecBole and implicit do;
- ``hits``: hits@K, the relevant items actually retrieved (torchmetrics); a list
  with no hit in the top K scores 0.

Undefined for R = 0: left out (``empty=skip``) or 0 (``empty=zero``).

Reference: Buckley and Voorhees, "Evaluating evaluation measure stability",
SIGIR 2000; trec_eval ``map`` / ``map_cut_K``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    total = a.ap_sum(spec.k)
    denominator = spec.conventions.ap_denominator
    if denominator == "R":
        return f"({total} / {a.relevant()})"
    if denominator == "min_rk":
        r = a.relevant()
        if spec.k is None:
            return f"({total} / {r})"
        k = int(spec.k)
        return f"({total} / (CASE WHEN {r} < {k} THEN {r} ELSE {k} END))"
    hits = a.hits(spec.k)
    return f"(CASE WHEN {hits} > 0 THEN {total} / {hits} ELSE 0.0 END)"


DEFINITION = MetricDefinition(
    name="ap",
    kind="ranking",
    cutoff="optional",
    title="Average precision",
    formula="Σ_{relevant i ≤ K} precision@i / D, D = R | min(R, K) | hits@K",
    reference="Buckley & Voorhees 2000; trec_eval map_cut_K",
    doc=__doc__ or "",
    options=("ap_denominator", "empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("average_precision",),
)
