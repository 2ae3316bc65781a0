"""Intra-list diversity at K.

    diversity(list) = 1 − mean over pairs {i, j} of the list's top K of sim(i, j)

averaged per list, then per user, then over the users of the group (the macro
rule of the ranking metrics, so arms get a standard error). sim comes from an
items file (same category, or cosine of feature vectors) or, without one, from
the co-occurrence cosine of the reference interactions
(:mod:`abeval.metrics.similarity`). Lists with fewer than two items in the top K
have no pair: left out and counted as ``lists_with_fewer_than_two_items``.

Reference: Ziegler et al., "Improving recommendation lists through topic
diversification", WWW 2005 (intra-list similarity); Smyth and McClave,
"Similarity vs. diversity", ICCBR 2001.
"""

from __future__ import annotations

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition
from abeval.metrics.similarity import similarity_ctes
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    k = int(spec.k or 0)
    ctes = [
        f"{p}_top AS (SELECT grp, user_id, list_id, item_id FROM {inp.ranked} WHERE rank <= {k})",
        f"{p}_pairs AS (SELECT a.grp, a.user_id, a.list_id, a.item_id AS item_lo, "
        f"b.item_id AS item_hi FROM {p}_top a JOIN {p}_top b ON b.grp = a.grp "
        "AND b.list_id = a.list_id AND a.item_id < b.item_id)",
        *similarity_ctes(inp, f"{p}_pairs", p),
        f"{p}_list AS (SELECT x.grp, x.user_id, x.list_id, 1 - AVG(s.sim) AS v FROM {p}_pairs x "
        f"JOIN {p}_sim s ON s.item_lo = x.item_lo AND s.item_hi = x.item_hi "
        "GROUP BY x.grp, x.user_id, x.list_id)",
        f"{p}_user AS (SELECT grp, user_id, AVG(v) AS v, COUNT(*) AS nl FROM {p}_list "
        "GROUP BY grp, user_id)",
        f"{p}_grp AS (SELECT grp, AVG(v) AS value, SUM(nl) AS counted, COUNT(v) AS n, "
        f"SUM(v) AS s, COALESCE(VAR_POP(v), 0) * COUNT(v) AS ss FROM {p}_user GROUP BY grp)",
        f"{p}_small AS (SELECT grp, SUM(CASE WHEN n < 2 THEN 1 ELSE 0 END) AS small FROM "
        f"(SELECT grp, list_id, COUNT(*) AS n FROM {p}_top GROUP BY grp, list_id) x GROUP BY grp)",
    ]
    select = (
        "SELECT m.grp, g.value, COALESCE(g.counted, 0) AS counted, m.small AS left_out, "
        f"COALESCE(g.n, 0) AS n, CAST(COALESCE(g.s, 0) AS {DOUBLE}) AS s, "
        f"CAST(COALESCE(g.ss, 0) AS {DOUBLE}) AS ss, CAST(0 AS BIGINT) AS extra "
        f"FROM {p}_small m LEFT JOIN {p}_grp g ON g.grp = m.grp"
    )
    return ctes, select


DEFINITION = MetricDefinition(
    name="diversity",
    kind="beyond",
    cutoff="required",
    title="Intra-list diversity",
    formula="1 − mean pairwise similarity of the top-K items, per list, then user, then users",
    reference="Ziegler et al. 2005 (WWW); Smyth & McClave 2001",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="lists",
    left_out_reason="lists_with_fewer_than_two_items",
    per_user=True,
    aliases=("ild", "intra_list_diversity"),
)
