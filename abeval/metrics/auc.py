"""Area under the ROC curve within a list.

    auc = (pairs ordered correctly + ½ · tied pairs) / (relevant in list × non-relevant in list)

over the (relevant, non-relevant) pairs of items in the same list: a pair is
ordered correctly when the relevant item has the better (smaller) rank; equal
ranks (possible with logged positions) count half. AUC takes no cutoff.

A list with R = 0 is left out (``empty=skip``) or scores 0 (``empty=zero``); a
list that has relevant items but no (relevant, non-relevant) pair among its
items (every item relevant, or, in ``evaluate``, no relevant item retrieved) has
no AUC and is counted as ``lists_without_pairs``.

References: Hanley and McNeil, "The meaning and use of the area under a ROC
curve", Radiology 143, 1982 (the Mann–Whitney form); Rendle et al., "BPR",
UAI 2009 (AUC per user, averaged over users).
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    pairs, correct = a.auc_pairs(), a.auc_correct()
    return f"(CASE WHEN {pairs} > 0 THEN {correct} / {pairs} ELSE NULL END)"


def undefined(spec: MetricSpec, a: ListAggregates) -> tuple[str, str]:
    return f"{a.auc_pairs()} = 0", "lists_without_pairs"


DEFINITION = MetricDefinition(
    name="auc",
    kind="ranking",
    cutoff="none",
    title="AUC",
    formula="share of (relevant, non-relevant) pairs in the list ordered correctly; ties ½",
    reference="Hanley & McNeil 1982; Rendle et al. 2009 (per-user AUC)",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    undefined=undefined,
    aliases=("roc_auc", "gauc"),
)
