"""Intra-list diversity at K.

    diversity(list) = 1 − mean over pairs {i, j} of the list's top K of sim(i, j)

averaged per list, then per user, then over the users of the group (the macro
rule of the ranking metrics, so arms get a standard error). sim comes from an
items file (same category, or cosine of feature vectors) or, without one, from
the co-occurrence cosine of the reference interactions
(:mod:`abeval.metrics.similarity`). Lists with fewer than two items in the top K
have no pair: left out and counted as ``lists_with_fewer_than_two_items``.

How the pair sum is computed (docs/metrics.md#diversity-in-one-pass): when sim
is a cosine of vectors the list's pairs are never built, since
``Σ_{i<j} v_i·v_j = (‖Σ v_i‖² − Σ ‖v_i‖²) / 2`` over its normalised vectors:
categories are one-hot vectors (the sum is Σ over categories of m(m − 1) / 2,
m the list's items in the category) and feature vectors are summed per
dimension. Co-occurrence vectors have one dimension per user, so the same
identity would read every user of every shown item; there the pairs are built
and joined to the co-occurring item pairs only (a pair that never co-occurs
has similarity 0).

Reference: Ziegler et al., "Improving recommendation lists through topic
diversification", WWW 2005 (intra-list similarity); Smyth and McClave,
"Similarity vs. diversity", ICCBR 2001.
"""

from __future__ import annotations

from collections.abc import Sequence

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition, as_double
from abeval.metrics.similarity import cooccurring_pairs_ctes
from abeval.metrics.spec import MetricSpec

_LIST = "grp, user_id, list_id"


def _pair_sums_category(inp: BeyondInputs, p: str) -> list[str]:
    """``{p}_total(grp, user_id, list_id, total)``: pairs of the same category."""
    return [
        f"{p}_cat AS (SELECT t.grp, t.user_id, t.list_id, i.category, COUNT(*) AS m "
        f"FROM {p}_top t LEFT JOIN {inp.items} i ON i.item_id = t.item_id "
        "GROUP BY t.grp, t.user_id, t.list_id, i.category)",
        f"{p}_total AS (SELECT {_LIST}, SUM(CASE WHEN category IS NULL THEN 0 "
        f"ELSE m * (m - 1) END) / 2 AS total FROM {p}_cat GROUP BY {_LIST})",
    ]


def _pair_sums_features(inp: BeyondInputs, p: str) -> list[str]:
    """``{p}_total``: Σ of the cosines of the list's pairs from its summed unit
    vectors (DuckDB lists; a missing or zero vector adds nothing)."""
    return [
        f"{p}_vec AS (SELECT t.grp, t.user_id, t.list_id, i.features AS f, "
        "SQRT(list_dot_product(i.features, i.features)) AS norm "
        f"FROM {p}_top t JOIN {inp.items} i ON i.item_id = t.item_id)",
        f"{p}_dim AS (SELECT {_LIST}, d, SUM(x) AS s, SUM(x * x) AS q FROM "
        f"(SELECT {_LIST}, UNNEST(f) / norm AS x, generate_subscripts(f, 1) AS d "
        f"FROM {p}_vec WHERE norm > 0) e GROUP BY {_LIST}, d)",
        f"{p}_total AS (SELECT {_LIST}, (SUM(s * s) - SUM(q)) / 2 AS total FROM {p}_dim "
        f"GROUP BY {_LIST})",
    ]


def _from_pair_sums(p: str) -> list[str]:
    """``{p}_list``: 1 − Σ sim / (n(n − 1) / 2) for the lists of n ≥ 2 items."""
    return [
        f"{p}_size AS (SELECT {_LIST}, COUNT(*) AS n FROM {p}_top GROUP BY {_LIST} "
        "HAVING COUNT(*) >= 2)",
        f"{p}_list AS (SELECT z.grp, z.user_id, z.list_id, 1 - "
        f"{as_double('COALESCE(x.total, 0)')} / (z.n * (z.n - 1) / 2) AS v FROM {p}_size z "
        f"LEFT JOIN {p}_total x ON x.grp = z.grp AND x.user_id = z.user_id "
        "AND x.list_id = z.list_id)",
    ]


def _pairs(inp: BeyondInputs, p: str) -> list[str]:
    """``{p}_list(grp, user_id, list_id, v)`` from the list's pairs, each joined to its
    co-occurrence similarity (0 when the pair never co-occurs). Numbering lists and
    items to join on integers measured no faster: numbering costs what it saves."""
    return [
        *cooccurring_pairs_ctes(inp, p),
        f"{p}_list AS (SELECT a.grp, a.user_id, a.list_id, "
        f"1 - SUM(COALESCE(s.sim, 0)) / COUNT(*) AS v FROM {p}_top a JOIN {p}_top b "
        "ON b.grp = a.grp AND b.list_id = a.list_id AND a.item_id < b.item_id "
        f"LEFT JOIN {p}_sim s ON s.item_lo = a.item_id AND s.item_hi = b.item_id "
        "GROUP BY a.grp, a.user_id, a.list_id)",
    ]


def _list_values(inp: BeyondInputs, p: str) -> list[str]:
    """CTEs ending in ``{p}_list(grp, user_id, list_id, v)`` for the lists with a pair."""
    if inp.similarity in ("category", "features"):
        if inp.items is None:
            raise ValueError(f"similarity {inp.similarity} needs an items relation")
        sums = _pair_sums_category if inp.similarity == "category" else _pair_sums_features
        return [*sums(inp, p), *_from_pair_sums(p)]
    if inp.similarity != "cooccurrence":
        raise ValueError(f"unknown similarity {inp.similarity!r}")
    return _pairs(inp, p)


def _per_group(p: str, lists: str, sizes: str) -> tuple[list[str], str]:
    """The per-user and per-group CTEs from the list values ``lists(grp, user_id,
    list_id, v)`` and the list sizes ``sizes(grp, list_id, n)`` (the lists with an
    item in the top K), and the SELECT of the metric's row per group."""
    ctes = [
        f"{p}_user AS (SELECT grp, user_id, AVG(v) AS v, COUNT(*) AS nl FROM {lists} l "
        "GROUP BY grp, user_id)",
        f"{p}_grp AS (SELECT grp, AVG(v) AS value, SUM(nl) AS counted, COUNT(v) AS n, "
        f"SUM(v) AS s, COALESCE(VAR_POP(v), 0) * COUNT(v) AS ss FROM {p}_user GROUP BY grp)",
        f"{p}_small AS (SELECT grp, SUM(CASE WHEN n < 2 THEN 1 ELSE 0 END) AS small FROM "
        f"{sizes} x GROUP BY grp)",
    ]
    select = (
        "SELECT m.grp, g.value, COALESCE(g.counted, 0) AS counted, m.small AS left_out, "
        f"COALESCE(g.n, 0) AS n, CAST(COALESCE(g.s, 0) AS {DOUBLE}) AS s, "
        f"CAST(COALESCE(g.ss, 0) AS {DOUBLE}) AS ss, CAST(0 AS BIGINT) AS extra "
        f"FROM {p}_small m LEFT JOIN {p}_grp g ON g.grp = m.grp"
    )
    return ctes, select


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    k = int(spec.k or 0)
    sizes = f"(SELECT grp, list_id, COUNT(*) AS n FROM {p}_top GROUP BY grp, list_id)"
    per_group, select = _per_group(p, f"{p}_list", sizes)
    ctes = [
        f"{p}_top AS (SELECT grp, user_id, list_id, item_id FROM {inp.ranked} WHERE rank <= {k})",
        *_list_values(inp, p),
        *per_group,
    ]
    return ctes, select


def shared_group_sql(
    specs: Sequence[MetricSpec], inp: BeyondInputs, p: str
) -> tuple[list[str], list[str]] | None:
    """Co-occurrence diversity at several cutoffs from one join of the item pairs of
    the top max(K): a pair counts at K when both its items rank within K. Category
    and feature similarity build no pairs: None (each cutoff on its own)."""
    if inp.similarity != "cooccurrence":
        return None
    ks = [int(spec.k or 0) for spec in specs]
    within = [f"a.rank <= {k} AND b.rank <= {k}" for k in ks]
    sums = ", ".join(
        f"SUM(CASE WHEN {w} THEN COALESCE(s.sim, 0) ELSE 0 END) AS s{j}, "
        f"COUNT(CASE WHEN {w} THEN 1 END) AS c{j}"
        for j, w in enumerate(within)
    )
    counts = ", ".join(f"COUNT(CASE WHEN rank <= {k} THEN 1 END) AS n{j}" for j, k in enumerate(ks))
    ctes = [
        f"{p}_top AS (SELECT grp, user_id, list_id, item_id, rank FROM {inp.ranked} "
        f"WHERE rank <= {max(ks)})",
        *cooccurring_pairs_ctes(inp, p),
        f"{p}_pairs AS (SELECT a.grp, a.user_id, a.list_id, {sums} FROM {p}_top a "
        f"JOIN {p}_top b ON b.grp = a.grp AND b.list_id = a.list_id AND a.item_id < b.item_id "
        f"LEFT JOIN {p}_sim s ON s.item_lo = a.item_id AND s.item_hi = b.item_id "
        "GROUP BY a.grp, a.user_id, a.list_id)",
        f"{p}_sizes AS (SELECT grp, list_id, {counts} FROM {p}_top GROUP BY grp, list_id)",
    ]
    selects = []
    for j in range(len(ks)):
        lists = (
            f"(SELECT grp, user_id, list_id, 1 - s{j} / c{j} AS v FROM {p}_pairs WHERE c{j} > 0)"
        )
        sizes = f"(SELECT grp, list_id, n{j} AS n FROM {p}_sizes WHERE n{j} > 0)"
        per_group, select = _per_group(f"{p}_{j}", lists, sizes)
        ctes += per_group
        selects.append(select)
    return ctes, selects


DEFINITION = MetricDefinition(
    name="diversity",
    kind="beyond",
    cutoff="required",
    title="Intra-list diversity",
    formula="1 − mean pairwise similarity of the top-K items, per list, then user, then users",
    reference="Ziegler et al. 2005 (WWW); Smyth & McClave 2001",
    doc=__doc__ or "",
    group_sql=group_sql,
    shared_group_sql=shared_group_sql,
    counted="lists",
    left_out_reason="lists_with_fewer_than_two_items",
    per_user=True,
    aliases=("ild", "intra_list_diversity"),
)
