"""Mean average precision at K.

    map@K = mean of ap@K over lists, then over users, then over users of a group

The per-list value is :mod:`abeval.metrics.ap` (same denominator convention);
``map@K`` and ``ap@K`` report the same number, under the name the reader knows.

Reference: Buckley and Voorhees, SIGIR 2000; trec_eval ``map_cut_K``.
"""

from __future__ import annotations

from abeval.metrics import ap
from abeval.metrics.base import MetricDefinition

DEFINITION = MetricDefinition(
    name="map",
    kind="ranking",
    cutoff="optional",
    title="Mean average precision",
    formula="mean of ap@K over lists (then users)",
    reference="Buckley & Voorhees 2000; trec_eval map_cut_K",
    doc=__doc__ or "",
    options=ap.DEFINITION.options,
    skips_empty=True,
    per_list=ap.per_list,
    aliases=("mean_average_precision",),
)
