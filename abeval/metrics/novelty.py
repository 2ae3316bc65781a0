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

from abeval.metrics.base import (
    BeyondInputs,
    ExposureSums,
    GroupRow,
    MetricDefinition,
    as_double,
    log2,
)
from abeval.metrics.spec import MetricSpec


def exposure_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> ExposureSums:
    """The slots' self-information over ``inp.exposure`` (an unshown item adds 0)."""
    if inp.reference_users is None or inp.reference_users < 0:
        raise ValueError("novelty needs the number of reference users")
    slots = f"slots_{int(spec.k or 0)}"
    known = "share IS NOT NULL AND share > 0"
    smoothed = f"{as_double('1')} / {int(inp.reference_users) + 1}"
    share = f"(CASE WHEN {known} THEN share ELSE {smoothed} END)"
    return ExposureSums(
        sums=(
            f"SUM({slots} * -{log2(share)}) AS {p}_bits",
            f"SUM(CASE WHEN {known} THEN 0 ELSE {slots} END) AS {p}_smoothed",
            f"SUM({slots}) AS {p}_slots",
        ),
        row=GroupRow(value=f"{p}_bits / {p}_slots", counted=f"{p}_smoothed", extra=f"{p}_slots"),
    )


DEFINITION = MetricDefinition(
    name="novelty",
    kind="beyond",
    cutoff="required",
    title="Novelty",
    formula="mean over top-K slots of −log2(share of users who interacted with the item; "
    "1/(users + 1) for an item nobody did)",
    reference="Zhou et al. 2010 (PNAS 107(10)); Castells, Hurley & Vargas 2015",
    doc=__doc__ or "",
    exposure_sql=exposure_sql,
    exposure_needs=("share",),
    counted="slots_without_popularity",
    aliases=("self_information",),
)
