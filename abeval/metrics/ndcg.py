"""Normalised discounted cumulative gain at K.

    DCG@K  = Σ_{i ≤ K} g(rel(i)) / log2(i + 1)
    IDCG@K = the same sum over the list's judged relevances sorted descending
    ndcg@K = DCG@K / IDCG@K

The gain g is a convention: ``linear`` g(r) = r (default, trec_eval
``ndcg_cut_K``), ``exp2`` g(r) = 2^r − 1 (Burges et al. 2005), ``binary``
g(r) = 1 for r > 0. IDCG uses all judged relevant items of the list (in replay:
the relevant items shown; in ``evaluate``: the user's relevant held-out items),
not only those retrieved. ``ndcg`` without a cutoff uses the whole list.
Undefined for R = 0: left out (``empty=skip``) or 0 (``empty=zero``).

References: Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR
techniques", ACM TOIS 20(4), 2002; Burges et al., "Learning to rank using
gradient descent", ICML 2005; trec_eval ``ndcg_cut_K``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    gain = spec.conventions.gain
    dcg, idcg = a.dcg(spec.k, gain), a.idcg(spec.k, gain)
    return f"(CASE WHEN {idcg} > 0 THEN {dcg} / {idcg} ELSE 0.0 END)"


DEFINITION = MetricDefinition(
    name="ndcg",
    kind="ranking",
    cutoff="optional",
    title="NDCG",
    formula="DCG@K / IDCG@K, DCG@K = Σ_{i≤K} g(rel(i)) / log2(i + 1)",
    reference="Järvelin & Kekäläinen 2002 (ACM TOIS 20(4)); trec_eval ndcg_cut_K",
    doc=__doc__ or "",
    options=("gain", "empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("n_dcg",),
)
