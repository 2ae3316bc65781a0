"""Catalogue coverage at K.

    coverage@K = |distinct catalogue items shown in the top K of the group's lists|
                 / |catalogue|

The catalogue is every item seen in the store for the experiment (replay) or
in the input files (``evaluate``), unless an items file names it. Shown items
outside the catalogue are counted as ``items_outside_catalogue``.

Reference: Herlocker et al., "Evaluating collaborative filtering recommender
systems", ACM TOIS 22(1), 2004, §4.1 (coverage); Ge, Delgado-Battenfeld and
Jannach, "Beyond accuracy", RecSys 2010 (catalogue coverage).
"""

from __future__ import annotations

from abeval.metrics.base import BeyondInputs, ExposureSums, GroupRow, MetricDefinition, as_double
from abeval.metrics.spec import MetricSpec


def exposure_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> ExposureSums:
    """The shown catalogue items and the shown items outside it (``inp.exposure``)."""
    slots = f"slots_{int(spec.k or 0)}"
    return ExposureSums(
        sums=(
            f"SUM(CASE WHEN {slots} > 0 THEN inside ELSE 0 END) AS {p}_in",
            f"SUM(CASE WHEN {slots} > 0 THEN 1 - inside ELSE 0 END) AS {p}_out",
        ),
        row=GroupRow(
            value=f"{as_double(f'{p}_in')} / NULLIF({as_double('catalogue_items')}, 0)",
            counted=f"{p}_in",
            left_out=f"{p}_out",
            extra="catalogue_items",
        ),
    )


DEFINITION = MetricDefinition(
    name="coverage",
    kind="beyond",
    cutoff="required",
    title="Catalogue coverage",
    formula="distinct items shown in the top K / distinct items in the catalogue",
    reference="Herlocker et al. 2004 (ACM TOIS 22(1)); Ge et al. 2010 (RecSys)",
    doc=__doc__ or "",
    exposure_sql=exposure_sql,
    exposure_needs=("inside", "catalogue_items"),
    counted="items_shown",
    left_out_reason="items_outside_catalogue",
    aliases=("catalog_coverage", "catalogue_coverage", "item_coverage"),
)
