"""Serendipity at K.

    unexpectedness(i, u) = 1 − mean over h in history(u) of sim(i, h)
    serendipity@K = mean over the relevant items (gain > 0) in the top K of the
                    group's lists of unexpectedness(item, user)

A relevant item is serendipitous when it is useful (relevant) and unlike what
the user had before. The history is what the user interacted with before (in
``evaluate``: the ``--history`` file); sim as for diversity
(:mod:`abeval.metrics.similarity`). A user without history has no
unexpectedness: their relevant shown items are left out and counted as
``items_without_history``.

Reference: Ge, Delgado-Battenfeld and Jannach, "Beyond accuracy", RecSys 2010
(serendipity = unexpected and useful); Kaminskas and Bridge, "Diversity,
serendipity, novelty, and coverage", ACM TiiS 7(1), 2016 (unexpectedness as
mean distance to the user's profile).
"""

from __future__ import annotations

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition
from abeval.metrics.similarity import similarity_ctes
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    if inp.history is None:
        raise ValueError("serendipity needs a history relation")
    k = int(spec.k or 0)
    ctes = [
        f"{p}_top AS (SELECT grp, user_id, list_id, item_id FROM {inp.ranked} "
        f"WHERE rank <= {k} AND gain > 0)",
        f"{p}_hist AS (SELECT DISTINCT user_id, item_id FROM {inp.history})",
        f"{p}_pairs AS (SELECT t.grp, t.list_id, t.item_id, "
        "CASE WHEN t.item_id < h.item_id THEN t.item_id ELSE h.item_id END AS item_lo, "
        "CASE WHEN t.item_id < h.item_id THEN h.item_id ELSE t.item_id END AS item_hi "
        f"FROM {p}_top t JOIN {p}_hist h ON h.user_id = t.user_id)",
        *similarity_ctes(inp, f"{p}_pairs", p),
        f"{p}_item AS (SELECT x.grp, x.list_id, x.item_id, 1 - AVG(s.sim) AS u FROM {p}_pairs x "
        f"JOIN {p}_sim s ON s.item_lo = x.item_lo AND s.item_hi = x.item_hi "
        "GROUP BY x.grp, x.list_id, x.item_id)",
        f"{p}_agg AS (SELECT grp, AVG(u) AS value, COUNT(*) AS counted FROM {p}_item GROUP BY grp)",
        f"{p}_all AS (SELECT grp, COUNT(*) AS total FROM {p}_top GROUP BY grp)",
    ]
    select = (
        "SELECT a.grp, g.value, COALESCE(g.counted, 0) AS counted, "
        "a.total - COALESCE(g.counted, 0) AS left_out, "
        f"CAST(NULL AS BIGINT) AS n, CAST(NULL AS {DOUBLE}) AS s, CAST(NULL AS {DOUBLE}) AS ss, "
        f"CAST(0 AS BIGINT) AS extra FROM {p}_all a LEFT JOIN {p}_agg g ON g.grp = a.grp"
    )
    return ctes, select


DEFINITION = MetricDefinition(
    name="serendipity",
    kind="beyond",
    cutoff="required",
    title="Serendipity",
    formula="mean over relevant top-K items of 1 − mean similarity to the user's history",
    reference="Ge et al. 2010 (RecSys); Kaminskas & Bridge 2016 (ACM TiiS 7(1))",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="relevant_items",
    left_out_reason="items_without_history",
    aliases=("unexpectedness",),
)
