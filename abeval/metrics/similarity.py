"""Item-to-item similarity for diversity and serendipity, as SQL.

- ``category``: 1 when both items have the same (non-null) category, else 0;
- ``features``: cosine of the items' feature vectors (DuckDB
  ``list_cosine_similarity``; ``evaluate`` only), 0 when either is missing;
- ``cooccurrence`` (no items file): cosine of the items' user sets in the
  reference interactions, |U_i ∩ U_j| / sqrt(|U_i| · |U_j|), 0 when either item
  has no interaction.

An item is always similar to itself (1).

Reference: Ziegler et al., "Improving recommendation lists through topic
diversification", WWW 2005 (intra-list similarity); Kaminskas and Bridge,
"Diversity, serendipity, novelty, and coverage", ACM TiiS 7(1), 2016.
"""

from __future__ import annotations

from abeval.metrics.base import DOUBLE, BeyondInputs, as_double

SIMILARITIES: tuple[str, ...] = ("category", "features", "cooccurrence")


def similarity_ctes(
    inp: BeyondInputs, pairs: str, prefix: str, carry: tuple[str, ...] = ()
) -> list[str]:
    """CTEs ending in ``{prefix}_sim(item_lo, item_hi, [carry...], sim)`` for the
    distinct (item_lo, item_hi) pairs of the relation ``pairs``; the ``carry``
    columns of ``pairs`` (such as integer item numbers) are passed through."""
    p = prefix
    extra = "".join(f", {c}" for c in carry)
    kept = "".join(f", d.{c}" for c in carry)
    ctes = [f"{p}_dp AS (SELECT DISTINCT item_lo, item_hi{extra} FROM {pairs})"]
    if inp.similarity in ("category", "features"):
        if inp.items is None:
            raise ValueError(f"similarity {inp.similarity} needs an items relation")
        if inp.similarity == "category":
            same = "a.category IS NOT NULL AND a.category = b.category"
            sim = f"CASE WHEN {same} THEN 1.0 ELSE 0.0 END"
        else:
            sim = "COALESCE(list_cosine_similarity(a.features, b.features), 0.0)"
        ctes.append(
            f"{p}_sim AS (SELECT d.item_lo, d.item_hi{kept}, CAST(CASE WHEN d.item_lo = d.item_hi "
            f"THEN 1.0 ELSE {sim} END AS {DOUBLE}) AS sim FROM {p}_dp d "
            f"LEFT JOIN {inp.items} a ON a.item_id = d.item_lo "
            f"LEFT JOIN {inp.items} b ON b.item_id = d.item_hi)"
        )
        return ctes
    if inp.similarity != "cooccurrence":
        raise ValueError(f"unknown similarity {inp.similarity!r}")
    ctes += [
        *cooccurring_pairs_ctes(inp, f"{p}_c", within=f"{p}_dp"),
        f"{p}_sim AS (SELECT d.item_lo, d.item_hi{kept}, "
        "CAST(CASE WHEN d.item_lo = d.item_hi THEN 1.0 WHEN c.sim IS NULL THEN 0.0 "
        f"ELSE c.sim END AS {DOUBLE}) AS sim FROM {p}_dp d LEFT JOIN {p}_c_sim c "
        "ON c.item_lo = d.item_lo AND c.item_hi = d.item_hi)",
    ]
    return ctes


def cooccurring_pairs_ctes(inp: BeyondInputs, prefix: str, within: str | None = None) -> list[str]:
    """CTEs ending in ``{prefix}_sim(item_lo, item_hi, sim)``: the co-occurrence
    cosine of every pair of distinct items with a user in common (``item_lo <
    item_hi``); every other pair of distinct items has similarity 0. This table
    is bounded by the interactions, not by the lists: Σ over users of d(d − 1) / 2
    rows at most, d the user's items.

    ``within`` names a relation of distinct pairs ``(item_lo, item_hi)``, ``item_lo <
    item_hi``: only those pairs are kept, before the count (the pairs shown together
    in some list, for diversity). The hint asks Spark to broadcast it into the
    users' pairs, so that only the kept pairs' counts are shuffled.

    Each interaction carries its item's count of users (a window), so a pair's
    counts come with it and no table of counts is joined to the pairs: PostgreSQL,
    estimating two such joined tables at 200 rows each, crossed them first (the
    square of the catalogue)."""
    p, x = prefix, inp.interactions
    hint, keep = "", ""
    if within is not None:
        hint = "/*+ BROADCAST(d) */ "
        keep = f"JOIN {within} d ON d.item_lo = ia.item_id AND d.item_hi = ib.item_id "
    return [
        f"{p}_n AS (SELECT user_id, item_id, COUNT(*) OVER (PARTITION BY item_id) AS n FROM {x})",
        f"{p}_co AS (SELECT {hint}ia.item_id AS item_lo, ib.item_id AS item_hi, "
        "ia.n AS n_lo, ib.n AS n_hi, COUNT(*) AS c "
        f"FROM {p}_n ia JOIN {p}_n ib ON ib.user_id = ia.user_id AND ia.item_id < ib.item_id "
        f"{keep}GROUP BY ia.item_id, ib.item_id, ia.n, ib.n)",
        f"{p}_sim AS (SELECT item_lo, item_hi, "
        f"CAST(c / SQRT({as_double('n_lo')} * n_hi) AS {DOUBLE}) AS sim FROM {p}_co)",
    ]
