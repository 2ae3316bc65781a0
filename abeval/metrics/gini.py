"""Gini index of exposure at K.

With x_1 ≤ … ≤ x_n the number of top-K slots of the group's lists taken by
each of the n catalogue items (0 for items never shown),

    gini@K = Σ_i (2i − n − 1) · x_i / (n · Σ_i x_i)

0 means every catalogue item is shown equally often; (n − 1)/n that one item
takes every slot. Slots taken by items outside the catalogue are not counted
(``items_outside_catalogue`` counts those items).

Reference: Fleder and Hosanagar, "Blockbuster culture's next rise or fall",
Management Science 55(5), 2009; Castells, Hurley and Vargas, "Novelty and
diversity in recommender systems", Recommender Systems Handbook, 2015.
"""

from __future__ import annotations

from abeval.metrics.base import BeyondInputs, ExposureSums, GroupRow, MetricDefinition, as_double
from abeval.metrics.spec import MetricSpec


def exposure_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> ExposureSums:
    """Σ_i (2i − n − 1) x_i in one aggregate of ``inp.exposure``.

    ``order_K`` sorts the group's shown items by ``inside`` (the r items outside
    the catalogue first), then x = ``slots_K``: a catalogue item's place i among
    all n catalogue items (the unshown ones first, with x = 0) is
    n − r_in + (order_K − r_out), r_in and r_out the group's shown items inside and
    outside. So the sum is 2 Σ order_K x + (n − 2 r − 1) Σ x over the catalogue
    items, r = r_in + r_out, in whole numbers. Ties in x do not change it."""
    k = int(spec.k or 0)
    x = f"slots_{k}"
    num = f"2 * {p}_ox + (catalogue_items - 2 * {p}_rows - 1) * {p}_x"
    return ExposureSums(
        sums=(
            f"SUM(CASE WHEN inside = 1 THEN order_{k} * {x} ELSE 0 END) AS {p}_ox",
            f"SUM(inside * {x}) AS {p}_x",
            f"COUNT(*) AS {p}_rows",
            f"SUM(CASE WHEN {x} > 0 THEN 1 - inside ELSE 0 END) AS {p}_out",
        ),
        row=GroupRow(
            value=f"{as_double(num)} / NULLIF({as_double('catalogue_items')} * {p}_x, 0)",
            counted="catalogue_items",
            left_out=f"{p}_out",
            extra=f"{p}_x",
        ),
    )


DEFINITION = MetricDefinition(
    name="gini",
    kind="beyond",
    cutoff="required",
    title="Gini index of exposure",
    formula="Σ_i (2i − n − 1) x_i / (n Σ x_i) over catalogue items sorted by top-K slots x",
    reference="Fleder & Hosanagar 2009; Castells, Hurley & Vargas 2015",
    doc=__doc__ or "",
    exposure_sql=exposure_sql,
    exposure_needs=("inside", "order", "catalogue_items"),
    counted="catalogue_items",
    left_out_reason="items_outside_catalogue",
    aliases=("gini_index",),
)
