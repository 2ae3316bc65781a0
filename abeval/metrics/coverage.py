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

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition, as_double
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    slots = f"slots_{int(spec.k or 0)}"
    ctes = [f"{p}_size AS (SELECT COUNT(*) AS n FROM {inp.catalogue})"]
    select = (
        f"SELECT s.grp, {as_double('SUM(s.inside)')} / NULLIF({as_double('z.n')}, 0) AS value, "
        "SUM(s.inside) AS counted, SUM(1 - s.inside) AS left_out, "
        f"CAST(NULL AS BIGINT) AS n, CAST(NULL AS {DOUBLE}) AS s, CAST(NULL AS {DOUBLE}) AS ss, "
        f"z.n AS extra FROM {inp.exposure} s CROSS JOIN {p}_size z WHERE s.{slots} > 0 "
        "GROUP BY s.grp, z.n"
    )
    return ctes, select


DEFINITION = MetricDefinition(
    name="coverage",
    kind="beyond",
    cutoff="required",
    title="Catalogue coverage",
    formula="distinct items shown in the top K / distinct items in the catalogue",
    reference="Herlocker et al. 2004 (ACM TOIS 22(1)); Ge et al. 2010 (RecSys)",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="items_shown",
    left_out_reason="items_outside_catalogue",
    aliases=("catalog_coverage", "catalogue_coverage", "item_coverage"),
)
