"""Intra-list diversity at K.

    diversity(list) = 1 − mean over pairs {i, j} of the list's top K of sim(i, j)

averaged per list, then per user, then over the users of the group (the macro
rule of the ranking metrics, so arms get a standard error). sim comes from an
items file (same category, or cosine of feature vectors) or, without one, from
the co-occurrence cosine of the reference interactions
(:mod:`abeval.metrics.similarity`). Lists with fewer than two items in the top K
have no pair: left out and counted as ``lists_with_fewer_than_two_items``.

How the pair sum is computed (docs/metrics.md#diversity-in-one-pass): every
cutoff comes from one pass over the top max(K) of each list, a pair counting at
K when both its items rank within K. When sim is a cosine of vectors the list's
pairs are never built, since ``Σ_{i<j} v_i·v_j = (‖Σ v_i‖² − Σ ‖v_i‖²) / 2``
over its normalised vectors: categories are one-hot vectors (the sum is Σ over
categories of m(m − 1) / 2, m the list's items in the category) and feature
vectors are summed per dimension. Co-occurrence vectors have one dimension per
user, so the same identity would read every user of every shown item; there
each list's pairs (at most K(K − 1) / 2) are built inside the list and look up
their similarity in the table of co-occurring item pairs, computed once per pair
(any other pair has similarity 0; the interactions bound it, and it measured 8×
smaller than the distinct pairs shown together, docs/design/spark.md §12). Spark
broadcasts that table (the hint in the SQL, a comment to DuckDB and PostgreSQL),
so no list's pair leaves its list.

Reference: Ziegler et al., "Improving recommendation lists through topic
diversification", WWW 2005 (intra-list similarity); Smyth and McClave,
"Similarity vs. diversity", ICCBR 2001.
"""

from __future__ import annotations

from collections.abc import Sequence

from abeval.metrics.base import BeyondInputs, GroupRow, GroupRows, MetricDefinition, as_double
from abeval.metrics.similarity import cooccurring_pairs_ctes
from abeval.metrics.spec import MetricSpec


def _key(inp: BeyondInputs, alias: str = "") -> str:
    """The columns naming a list (``inp.list_key``), each qualified by ``alias``."""
    return ", ".join(f"{alias}{c}" for c in inp.list_key)


def _on(inp: BeyondInputs, a: str, b: str) -> str:
    """The join condition of two relations' rows of the same list."""
    return " AND ".join(f"{b}.{c} = {a}.{c}" for c in inp.list_key)


def _top(inp: BeyondInputs, ks: Sequence[int]) -> str:
    """The rows of the lists' top max(K), as a subquery each reader scans itself: a
    part read by several joins would be copied first by DuckDB and PostgreSQL (0.4 of
    the statement's 4 CPU seconds at 10M events), while ``ranked`` is a table."""
    return (
        f"(SELECT grp, user_id, list_id, item_id, rank FROM {inp.ranked} WHERE rank <= {max(ks)})"
    )


def _sums_category(inp: BeyondInputs, p: str, ks: Sequence[int]) -> list[str]:
    """``{p}_tot``: per cutoff j, ``s{j}`` the pairs of the same category within it,
    Σ over categories of m(m − 1) / 2 (m the list's items in the category)."""
    m = ", ".join(f"COUNT(CASE WHEN t.rank <= {k} THEN 1 END) AS m{j}" for j, k in enumerate(ks))
    sums = ", ".join(f"SUM(m{j} * (m{j} - 1)) / 2 AS s{j}" for j in range(len(ks)))
    return [
        f"{p}_cat AS (SELECT {_key(inp, 't.')}, i.category, {m} "
        f"FROM {_top(inp, ks)} t JOIN {inp.items} i ON i.item_id = t.item_id "
        f"WHERE i.category IS NOT NULL GROUP BY {_key(inp, 't.')}, i.category)",
        f"{p}_tot AS (SELECT {_key(inp)}, {sums} FROM {p}_cat GROUP BY {_key(inp)})",
    ]


def _sums_features(inp: BeyondInputs, p: str, ks: Sequence[int]) -> list[str]:
    """``{p}_tot``: per cutoff j, ``s{j}`` the Σ of the cosines of the list's pairs
    within it, from its summed unit vectors (DuckDB lists; a missing or zero vector
    adds nothing)."""
    sums = ", ".join(
        f"SUM(CASE WHEN rank <= {k} THEN x END) AS s{j}, "
        f"SUM(CASE WHEN rank <= {k} THEN x * x END) AS q{j}"
        for j, k in enumerate(ks)
    )
    totals = ", ".join(f"(SUM(s{j} * s{j}) - SUM(q{j})) / 2 AS s{j}" for j in range(len(ks)))
    key = _key(inp)
    return [
        f"{p}_vec AS (SELECT {_key(inp, 't.')}, t.rank, i.features AS f, "
        "SQRT(list_dot_product(i.features, i.features)) AS norm "
        f"FROM {_top(inp, ks)} t JOIN {inp.items} i ON i.item_id = t.item_id)",
        f"{p}_dim AS (SELECT {key}, d, {sums} FROM "
        f"(SELECT {key}, rank, UNNEST(f) / norm AS x, generate_subscripts(f, 1) AS d "
        f"FROM {p}_vec WHERE norm > 0) e GROUP BY {key}, d)",
        f"{p}_tot AS (SELECT {key}, {totals} FROM {p}_dim GROUP BY {key})",
    ]


def _sums_cooccurrence(inp: BeyondInputs, p: str, ks: Sequence[int]) -> list[str]:
    """``{p}_tot`` from each list's pairs, joined to the co-occurring item pairs'
    similarities (``{p}_sim``, one row per pair of items with a user in common; any
    other pair has similarity 0). The hint asks Spark to broadcast that table, so the
    lists' pairs are summed where the self-join made them, without a shuffle; the
    outer join keeps the pairs built before the lookup (an inner join let DuckDB
    join every shown item to its co-occurring pairs first: 40 times the rows)."""
    sums = ", ".join(
        f"SUM(CASE WHEN a.rank <= {k} AND b.rank <= {k} THEN s.sim END) AS s{j}"
        for j, k in enumerate(ks)
    )
    return [
        *cooccurring_pairs_ctes(inp, p),
        f"{p}_tot AS (SELECT /*+ BROADCAST(s) */ {_key(inp, 'a.')}, {sums} "
        f"FROM {_top(inp, ks)} a JOIN {_top(inp, ks)} b ON {_on(inp, 'a', 'b')} "
        f"AND a.item_id < b.item_id LEFT JOIN {p}_sim s ON s.item_lo = a.item_id "
        f"AND s.item_hi = b.item_id GROUP BY {_key(inp, 'a.')})",
    ]


def _lists(inp: BeyondInputs, p: str, ks: Sequence[int]) -> list[str]:
    """CTEs ending in ``{p}_lists(grp, user_id, n{j}, c{j}, s{j})`` over the
    lists with an item in the top max(K): per cutoff j, the items in the top K, the
    pairs among them and the sum of their similarities (a list's items are distinct,
    so its pairs are n(n − 1) / 2)."""
    if inp.similarity in ("category", "features"):
        if inp.items is None:
            raise ValueError(f"similarity {inp.similarity} needs an items relation")
        sums = _sums_category if inp.similarity == "category" else _sums_features
    elif inp.similarity == "cooccurrence":
        sums = _sums_cooccurrence
    else:
        raise ValueError(f"unknown similarity {inp.similarity!r}")
    sizes = ", ".join(f"COUNT(CASE WHEN rank <= {k} THEN 1 END) AS n{j}" for j, k in enumerate(ks))
    cols = ", ".join(
        f"z.n{j}, z.n{j} * (z.n{j} - 1) / 2 AS c{j}, COALESCE(x.s{j}, 0) AS s{j}"
        for j in range(len(ks))
    )
    # Keyed by the list's key like the pair sums, so that Spark joins the two without
    # shuffling either again; a list's group and user are the same on all its rows.
    carried = "".join(f"MIN({c}) AS {c}, " for c in ("grp", "user_id") if c not in inp.list_key)
    return [
        *sums(inp, p, ks),
        f"{p}_size AS (SELECT {_key(inp)}, {carried}{sizes} FROM {_top(inp, ks)} z "
        f"GROUP BY {_key(inp)})",
        f"{p}_lists AS (SELECT z.grp, z.user_id, {cols} FROM {p}_size z "
        f"LEFT JOIN {p}_tot x ON {_on(inp, 'z', 'x')})",
    ]


def _per_group(p: str, n_cutoffs: int) -> tuple[list[str], list[GroupRow]]:
    """The per-user and per-group CTEs of every cutoff at once from ``{p}_lists``
    (ending in ``{p}_grp``), and the metric's row per cutoff: a group has a row
    when one of its lists has an item in the top K."""
    js = range(n_cutoffs)
    values = ", ".join(
        f"CASE WHEN c{j} > 0 THEN 1 - {as_double(f's{j}')} / c{j} END AS v{j}, n{j}" for j in js
    )
    per_user = ", ".join(
        f"AVG(v{j}) AS v{j}, COUNT(v{j}) AS nl{j}, "
        f"SUM(CASE WHEN n{j} = 1 THEN 1 ELSE 0 END) AS small{j}, MAX(n{j}) AS shown{j}"
        for j in js
    )
    per_group = ", ".join(
        f"AVG(v{j}) AS value{j}, SUM(nl{j}) AS counted{j}, COUNT(v{j}) AS n{j}, "
        f"SUM(v{j}) AS s{j}, COALESCE(VAR_POP(v{j}), 0) * COUNT(v{j}) AS ss{j}, "
        f"SUM(small{j}) AS small{j}, MAX(shown{j}) AS shown{j}"
        for j in js
    )
    ctes = [
        f"{p}_user AS (SELECT grp, user_id, {per_user} FROM (SELECT grp, user_id, {values} "
        f"FROM {p}_lists) l GROUP BY grp, user_id)",
        f"{p}_grp AS (SELECT grp, {per_group} FROM {p}_user GROUP BY grp)",
    ]
    rows = [
        GroupRow(
            value=f"value{j}",
            counted=f"COALESCE(counted{j}, 0)",
            left_out=f"small{j}",
            n=f"n{j}",
            s=f"COALESCE(s{j}, 0)",
            ss=f"COALESCE(ss{j}, 0)",
            present=f"shown{j} > 0",
        )
        for j in js
    ]
    return ctes, rows


def shared_group_sql(specs: Sequence[MetricSpec], inp: BeyondInputs, p: str) -> GroupRows:
    """Diversity at every cutoff of ``specs`` from one pass over the top max(K) of
    the lists (the module docstring): one row per group holding every cutoff."""
    ks = [int(spec.k or 0) for spec in specs]
    per_group, rows = _per_group(p, len(ks))
    ctes = (
        *_lists(inp, p, ks),
        *per_group,
    )
    return GroupRows(ctes=ctes, relation=f"{p}_grp", rows=tuple(rows))


DEFINITION = MetricDefinition(
    name="diversity",
    kind="beyond",
    cutoff="required",
    title="Intra-list diversity",
    formula="1 − mean pairwise similarity of the top-K items, per list, then user, then users",
    reference="Ziegler et al. 2005 (WWW); Smyth & McClave 2001",
    doc=__doc__ or "",
    shared_group_sql=shared_group_sql,
    counted="lists",
    left_out_reason="lists_with_fewer_than_two_items",
    per_user=True,
    aliases=("ild", "intra_list_diversity"),
)
