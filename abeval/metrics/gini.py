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

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition, as_double
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    slots = f"slots_{int(spec.k or 0)}"
    ctes = [
        f"{p}_size AS (SELECT COUNT(*) AS n FROM {inp.catalogue})",
        f"{p}_ord AS (SELECT grp, {slots} AS cnt, ROW_NUMBER() OVER (PARTITION BY grp "
        f"ORDER BY {slots}, item_id) AS j, COUNT(*) OVER (PARTITION BY grp) AS m "
        f"FROM {inp.exposure} WHERE inside = 1 AND {slots} > 0)",
        f"{p}_num AS (SELECT o.grp, SUM({as_double('2 * (z.n - o.m + o.j) - z.n - 1')} * o.cnt) "
        f"AS num, SUM(o.cnt) AS total FROM {p}_ord o CROSS JOIN {p}_size z GROUP BY o.grp)",
        f"{p}_out AS (SELECT grp, COUNT(CASE WHEN inside = 0 THEN 1 END) AS outside "
        f"FROM {inp.exposure} WHERE {slots} > 0 GROUP BY grp)",
    ]
    select = (
        f"SELECT o.grp, g.num / NULLIF({as_double('z.n')} * g.total, 0) AS value, "
        "z.n AS counted, o.outside AS left_out, "
        f"CAST(NULL AS BIGINT) AS n, CAST(NULL AS {DOUBLE}) AS s, CAST(NULL AS {DOUBLE}) AS ss, "
        f"COALESCE(g.total, 0) AS extra FROM {p}_out o LEFT JOIN {p}_num g ON g.grp = o.grp "
        f"CROSS JOIN {p}_size z"
    )
    return ctes, select


DEFINITION = MetricDefinition(
    name="gini",
    kind="beyond",
    cutoff="required",
    title="Gini index of exposure",
    formula="Σ_i (2i − n − 1) x_i / (n Σ x_i) over catalogue items sorted by top-K slots x",
    reference="Fleder & Hosanagar 2009; Castells, Hurley & Vargas 2015",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="catalogue_items",
    left_out_reason="items_outside_catalogue",
    aliases=("gini_index",),
)
