"""R-precision.

    Rprec = hits@R / R

R is the number of relevant items for the list (as for recall), so the cutoff
is the list's own: precision at the rank where a perfect list would have
retrieved every relevant item. A list shorter than R counts its hits over R.
Undefined for R = 0: left out (``empty=skip``) or 0 (``empty=zero``, trec_eval).

Reference: Buckley and Voorhees, "Evaluating evaluation measure stability",
SIGIR 2000 (R-precision); trec_eval ``Rprec``.
"""

from __future__ import annotations

from abeval.metrics.base import ListAggregates, MetricDefinition
from abeval.metrics.spec import MetricSpec


def per_list(spec: MetricSpec, a: ListAggregates) -> str:
    return f"({a.hits_at_r()} / {a.relevant()})"


DEFINITION = MetricDefinition(
    name="rprec",
    kind="ranking",
    cutoff="none",
    title="R-precision",
    formula="hits@R / R",
    reference="Buckley & Voorhees 2000; trec_eval Rprec",
    doc=__doc__ or "",
    options=("empty", "duplicates"),
    skips_empty=True,
    per_list=per_list,
    aliases=("r_precision", "r_prec"),
)
