"""Beyond-accuracy metrics of ``abeval evaluate``: coverage, Gini, novelty,
diversity, serendipity.

Their reference tables are made here from the input files, then the SQL of
:mod:`abeval.metrics.beyond` reads them with ``ranked_all``:

- ``catalogue``: the items file, else every item in the input files;
- ``interactions`` and ``popularity``: the history file, else the relevant truth
  pairs (popularity = share of the users who interacted with an item);
- the similarity of two items: their feature vectors, else their categories
  (both from the items file), else co-occurrence in ``interactions``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from abeval.analysis.evaluate.sql import rows
from abeval.metrics import BeyondInputs, MetricSpec, OfflineMetricResult, beyond_query

if TYPE_CHECKING:
    import duckdb


def beyond_results(
    con: duckdb.DuckDBPyConnection,
    specs: Sequence[MetricSpec],
    models: Sequence[str],
    have_items: bool,
    have_history: bool,
    extra: Mapping[str, str],
) -> list[OfflineMetricResult]:
    """One result per beyond-accuracy metric per model (the groups renamed to models)."""
    reference_users = _build_references(con, len(models), have_items, have_history)
    similarity = _similarity(con, have_items)
    inputs = BeyondInputs(
        ranked="ranked_all",
        catalogue="catalogue",
        popularity="popularity",
        interactions="interactions",
        items="items" if have_items else None,
        similarity=similarity,
        history="history" if have_history else None,
        reference_users=reference_users,
    )
    query = beyond_query(specs, inputs)
    found = query.results(
        rows(con.execute(query.sql())),
        _group_sizes(con, len(models)),
        extra_convention=_conventions(extra, have_items, have_history, similarity),
    )
    names = {str(i): m for i, m in enumerate(models)}
    return [replace(r, group=names[r.group]) for r in found]


def _build_references(
    con: duckdb.DuckDBPyConnection, n_models: int, have_items: bool, have_history: bool
) -> int:
    """``catalogue``, ``interactions`` and ``popularity`` (module docstring); returns
    the number of reference users popularity's share is over."""
    if have_items:
        con.execute("CREATE TABLE catalogue AS SELECT DISTINCT item_id FROM items")
    else:
        parts = [f"SELECT item_id FROM rec_{i}" for i in range(n_models)]
        parts.append("SELECT item_id FROM truth")
        if have_history:
            parts.append("SELECT item_id FROM history")
        con.execute(
            "CREATE TABLE catalogue AS SELECT DISTINCT item_id FROM "
            f"({' UNION ALL '.join(parts)}) x"
        )
    if have_history:
        con.execute("CREATE TABLE interactions AS SELECT DISTINCT user_id, item_id FROM history")
        users = "SELECT COUNT(DISTINCT user_id) FROM history"
    else:
        con.execute(
            "CREATE TABLE interactions AS SELECT DISTINCT user_id, item_id FROM truth "
            "WHERE gain > 0"
        )
        users = "SELECT COUNT(*) FROM truth_users"
    con.execute(
        "CREATE TABLE popularity AS SELECT item_id, CAST(COUNT(*) AS DOUBLE) / "
        f"({users}) AS share FROM interactions GROUP BY item_id"
    )
    found = con.execute(users).fetchone()
    return int(found[0]) if found else 0


def _similarity(con: duckdb.DuckDBPyConnection, have_items: bool) -> str:
    """features, category (from the items file) or cooccurrence."""
    if have_items:
        cols = {r[0] for r in con.execute("DESCRIBE items").fetchall()}
        if "features" in cols:
            return "features"
        if "category" in cols:
            return "category"
    return "cooccurrence"


def _group_sizes(con: duckdb.DuckDBPyConnection, n_models: int) -> dict[str, tuple[int, int]]:
    """(users, lists) in ``ranked_all`` by group; (0, 0) for a model without any."""
    groups = {
        str(r["grp"]): (int(r["users"]), int(r["lists"]))
        for r in rows(
            con.execute(
                "SELECT grp, COUNT(DISTINCT user_id) AS users, COUNT(DISTINCT list_id) AS lists "
                "FROM ranked_all GROUP BY grp"
            )
        )
    }
    for i in range(n_models):
        groups.setdefault(str(i), (0, 0))
    return groups


def _conventions(
    extra: Mapping[str, str], have_items: bool, have_history: bool, similarity: str
) -> dict[str, str]:
    convention = dict(extra)
    convention["catalogue"] = "items file" if have_items else "all items in the input files"
    convention["reference"] = (
        "history file (popularity, co-occurrence)"
        if have_history
        else "relevant truth pairs; popularity = share of truth users"
    )
    convention["similarity"] = similarity
    return convention
