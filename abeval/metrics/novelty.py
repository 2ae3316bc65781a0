"""Novelty (mean self-information) at K.

    novelty@K = mean over the group's top-K slots of −log2 popularity(i)

popularity(i) is the share of reference users who interacted with item i (in
replay: the analysed users' clicks and purchases in the experiment; in
``evaluate``: the history file when given, else the truth file). An item no
reference user interacted with gets add-one smoothing, popularity = 1 / (U + 1)
with U the number of reference users: rarer than any item seen once, so its
slot counts as the most novel rather than being left out. Every slot counts;
``slots_without_popularity`` says how many were smoothed
(docs/metrics.md#novelty).

Reference: Zhou et al., "Solving the apparent diversity–accuracy dilemma of
recommender systems", PNAS 107(10), 2010 (novelty as self-information);
Castells, Hurley and Vargas 2015.
"""

from __future__ import annotations

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition, as_double, log2
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    if inp.reference_users is None or inp.reference_users < 0:
        raise ValueError("novelty needs the number of reference users")
    slots = f"t.slots_{int(spec.k or 0)}"
    known = "t.share IS NOT NULL AND t.share > 0"
    smoothed = f"{as_double('1')} / {int(inp.reference_users) + 1}"
    share = f"(CASE WHEN {known} THEN t.share ELSE {smoothed} END)"
    select = (
        f"SELECT t.grp, SUM({slots} * -{log2(share)}) / SUM({slots}) AS value, "
        f"SUM(CASE WHEN {known} THEN 0 ELSE {slots} END) AS counted, "
        "CAST(0 AS BIGINT) AS left_out, "
        f"CAST(NULL AS BIGINT) AS n, CAST(NULL AS {DOUBLE}) AS s, CAST(NULL AS {DOUBLE}) AS ss, "
        f"SUM({slots}) AS extra FROM {inp.exposure} t WHERE {slots} > 0 GROUP BY t.grp"
    )
    return [], select


DEFINITION = MetricDefinition(
    name="novelty",
    kind="beyond",
    cutoff="required",
    title="Novelty",
    formula="mean over top-K slots of −log2(share of users who interacted with the item; "
    "1/(users + 1) for an item nobody did)",
    reference="Zhou et al. 2010 (PNAS 107(10)); Castells, Hurley & Vargas 2015",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="slots_without_popularity",
    aliases=("self_information",),
)
