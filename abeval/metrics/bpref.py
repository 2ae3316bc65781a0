"""Binary preference (bpref).

    bpref = (1 / R) · Σ_{relevant retrieved r} (1 − min(n_r, R) / min(N, R))

n_r is the number of judged non-relevant items ranked above r, N the number of
judged non-relevant items for the list, R the number of relevant ones. Items
without a judgment count for nothing, neither for nor against: bpref was made
for incomplete judgments. A term with n_r = 0 is 1. In ``evaluate`` the judged
items are the truth file's rows (a grade of 0, or below ``min_relevance``, is a
judged non-relevant item); in log replay every item shown was judged.
Undefined for R = 0: left out (``empty=skip``) or 0 (``empty=zero``, trec_eval).

Reference: Buckley and Voorhees, "Retrieval evaluation with incomplete
information", SIGIR 2004; trec_eval ``bpref``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    return f"({a.bpref_sum()} / {a.relevant()})"


DEFINITION = MetricDefinition(
    name="bpref",
    kind="ranking",
    cutoff="none",
    title="Binary preference",
    formula="(1/R) Σ_{relevant r} (1 − min(n_r, R) / min(N, R))",
    reference="Buckley & Voorhees 2004 (SIGIR); trec_eval bpref",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("binary_preference",),
)
