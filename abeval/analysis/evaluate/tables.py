"""The ranked lists of ``abeval evaluate`` and what is computed from them.

- ``ranked_all(grp, user_id, list_id, item_id, rank, gain)``: each model's
  (``grp`` = its index) list for every user with truth, ranked 1..n;
- the :class:`~abeval.analysis.evaluate.results.UserCoverage` of each model's users;
- ``per_user``: the value of every ranking metric for each (model, user), from the
  SQL kernel (:mod:`abeval.metrics.kernel`); its group means are the ranking
  results, its rows the paired comparison and the ``--per-user`` file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.analysis.evaluate.results import PairedComparison, UserCoverage
from abeval.analysis.evaluate.sql import count, first_line, rows, scalar
from abeval.errors import AbevalError
from abeval.files import split_name
from abeval.metrics import MetricSpec, OfflineMetricResult, RankingQuery
from abeval.metrics.results import complete
from abeval.stats.paired import adjust_holm, paired_comparison
from abeval.store.quoting import quote_ident, quote_literal

if TYPE_CHECKING:
    import duckdb


def build_ranked(
    con: duckdb.DuckDBPyConnection,
    n_models: int,
    ranking: Sequence[MetricSpec],
    beyond: Sequence[MetricSpec],
) -> None:
    """``ranked_all(grp, user_id, list_id, item_id, rank, gain)``: the lists of the users
    that have truth, ranked 1..n by key descending then item id descending, with the
    truth grade of each item as its gain.

    The kernel reads only what the metrics need, so only that is built:

    - AUC and bpref need every item of every list: a window over all rows;
    - AP, NDCG or Rprec over the whole list need the rank of every relevant item: the same
      window, keeping relevant items and the top K;
    - otherwise (cutoff metrics and MRR) the top K of each list, found without
      sorting whole lists (:func:`_rank_top_k`), plus, for MRR over the whole list,
      the first relevant item of lists that have none in the top K, ranked by
      counting the items that beat it. The kernel sees the same ranks either way.
    """
    cutoffs = [s.k for s in [*ranking, *beyond] if s.k is not None]
    top_k = max(cutoffs, default=1)
    everything = any(s.name in ("auc", "bpref") for s in ranking)
    whole_list = any(s.k is None and s.name in ("ap", "map", "ndcg", "rprec") for s in ranking)
    if everything or whole_list:
        _rank_every_item(con, n_models, None if everything else top_k)
        return
    first_relevant = any(s.k is None and s.name == "mrr" for s in ranking)
    con.execute(f"CREATE TABLE ranked_all ({_RANKED_COLUMNS})")
    for i in range(n_models):
        _rank_top_k(con, i, top_k, first_relevant)


_RANKED_COLUMNS = (
    "grp INTEGER, user_id VARCHAR, list_id VARCHAR, item_id VARCHAR, rank BIGINT, gain DOUBLE"
)
_TRUTH_JOIN = "LEFT JOIN truth t ON t.user_id = x.user_id AND t.item_id = x.item_id"


def _rank_every_item(con: duckdb.DuckDBPyConnection, n_models: int, top_k: int | None) -> None:
    """Every item ranked by a window; with ``top_k``, only the relevant ones and the top K."""
    where = "" if top_k is None else f" WHERE gain > 0 OR rank <= {top_k}"
    parts = " UNION ALL ".join(
        f"SELECT {i} AS grp, x.user_id, x.item_id, ROW_NUMBER() OVER (PARTITION BY x.user_id "
        "ORDER BY x.key DESC, x.item_id DESC) AS rank, COALESCE(t.gain, 0.0) AS gain "
        f"FROM src_{i} x JOIN truth_users u ON u.user_id = x.user_id {_TRUTH_JOIN}"
        for i in range(n_models)
    )
    con.execute(
        "CREATE TABLE ranked_all AS SELECT grp, user_id, user_id AS list_id, item_id, rank, "
        f"gain FROM ({parts}) r{where}"
    )


def _rank_top_k(con: duckdb.DuckDBPyConnection, i: int, top_k: int, first_relevant: bool) -> None:
    """Model ``i``'s top K of each list into ``ranked_all`` (and, with
    ``first_relevant``, the first relevant item of lists without one in the top K).

    Three passes over the file's rows, none of them a sort of whole lists:

    - ``top_rel``, the relevant rows (a join with ``truth``): the only gains the top K
      and MRR read;
    - ``top_cut``, the K-th best key of each list (its lowest when the list is
      shorter), an aggregate over numbers;
    - the rows at or above their list's cut, ranked by a window. An item that beats
      one of them is at or above the cut too, so its rank among them is its rank in
      the whole list; ties at the cut are ranked like any other.
    """
    con.execute(
        "CREATE TEMP TABLE top_rel AS SELECT s.user_id, s.item_id, s.key, t.gain "
        f"FROM src_{i} s JOIN truth t ON t.user_id = s.user_id AND t.item_id = s.item_id "
        "WHERE t.gain > 0"
    )
    con.execute(
        f"CREATE TEMP TABLE top_cut AS SELECT a.user_id, a.cut FROM (SELECT user_id, "
        f"list_min(max(key, {top_k})) AS cut FROM src_{i} GROUP BY user_id) a "
        "SEMI JOIN truth_users u ON u.user_id = a.user_id"
    )
    con.execute(
        f"INSERT INTO ranked_all SELECT {i}, x.user_id, x.user_id, x.item_id, x.rank, "
        "COALESCE(r.gain, 0.0) FROM (SELECT s.user_id, s.item_id, ROW_NUMBER() OVER "
        "(PARTITION BY s.user_id ORDER BY s.key DESC, s.item_id DESC) AS rank "
        f"FROM src_{i} s SEMI JOIN top_cut c ON c.user_id = s.user_id AND s.key >= c.cut) x "
        "LEFT JOIN top_rel r ON r.user_id = x.user_id AND r.item_id = x.item_id "
        f"WHERE x.rank <= {top_k}"
    )
    if first_relevant:
        _add_first_relevant(con, i)
    con.execute("DROP TABLE top_rel")
    con.execute("DROP TABLE top_cut")


def _add_first_relevant(con: duckdb.DuckDBPyConnection, i: int) -> None:
    """For MRR over the whole list: the first relevant item of each of model ``i``'s
    lists that has none in the top K, at its rank (1 + the items that beat it: a
    higher key, or the same key and a higher item id), from ``top_rel``."""
    best = "{'k': key, 'i': item_id}"
    con.execute(
        "INSERT INTO ranked_all "
        f"WITH best AS (SELECT user_id, max({best}) AS best, arg_max(gain, {best}) AS gain "
        "FROM top_rel GROUP BY user_id), "
        "missing AS (SELECT b.* FROM best b WHERE NOT EXISTS (SELECT 1 FROM ranked_all a "
        f"WHERE a.grp = {i} AND a.user_id = b.user_id AND a.gain > 0)) "
        f"SELECT {i}, m.user_id, m.user_id, any_value(m.best.i), 1 + COUNT(*) FILTER "
        "(WHERE s.key > m.best.k OR s.item_id > m.best.i), any_value(m.gain) "
        f"FROM src_{i} s JOIN missing m ON m.user_id = s.user_id WHERE s.key >= m.best.k "
        "GROUP BY m.user_id"
    )


def coverage(con: duckdb.DuckDBPyConnection, models: Sequence[str]) -> list[UserCoverage]:
    """How the users of each model's file and the truth users overlap."""
    out: list[UserCoverage] = []
    truth_users = count(con, "truth_users")
    no_relevant = scalar(con, "SELECT COUNT(*) FROM truth_users WHERE best <= 0")
    for i, model in enumerate(models):
        row = con.execute(
            f"WITH ru AS (SELECT user_id FROM rec_users_{i}) "
            "SELECT (SELECT COUNT(*) FROM ru), "
            "(SELECT COUNT(*) FROM ru SEMI JOIN truth_users t ON t.user_id = ru.user_id), "
            "(SELECT COUNT(*) FROM truth_users t ANTI JOIN ru ON ru.user_id = t.user_id)"
        ).fetchone()
        assert row is not None
        in_recs, evaluated, without_recs = int(row[0]), int(row[1]), int(row[2])
        out.append(
            UserCoverage(
                model=model,
                users_in_recommendations=in_recs,
                users_evaluated=evaluated,
                users_without_truth=in_recs - evaluated,
                truth_users=truth_users,
                truth_users_without_recommendations=without_recs,
                truth_users_without_relevant=no_relevant,
            )
        )
    return out


#: The judged non-relevant items (a truth row whose gain is 0), for bpref.
_NONRELEVANT = "nonrelevant AS (SELECT user_id AS list_id, item_id FROM truth WHERE gain = 0)"


def build_per_user(
    con: duckdb.DuckDBPyConnection, query: RankingQuery, n_models: int, missing_zero: bool
) -> None:
    """``per_user``: the kernel's per-user relation over ``ranked_all``; with
    ``missing_zero``, truth users with a relevant item but no list score 0."""
    con.execute(
        f"CREATE TABLE per_user AS WITH ranked AS (SELECT * FROM ranked_all), "
        f"judged AS (SELECT * FROM judged_all), {_NONRELEVANT}, {query.ctes} "
        f"SELECT * FROM {query.user_relation}"
    )
    if not missing_zero:
        return
    cols = ["m.grp", "u.user_id", "1", "0", "0"]
    for _ in query.columns:
        cols += ["0.0", "1"]
    models = " UNION ALL ".join(f"SELECT {i} AS grp" for i in range(n_models))
    con.execute(
        f"INSERT INTO per_user SELECT {', '.join(cols)} FROM ({models}) m "
        "CROSS JOIN (SELECT user_id FROM truth_users WHERE best > 0) u "
        "WHERE NOT EXISTS (SELECT 1 FROM per_user p WHERE p.grp = m.grp AND p.user_id = u.user_id)"
    )


def ranking_results(
    con: duckdb.DuckDBPyConnection,
    query: RankingQuery,
    specs: Sequence[MetricSpec],
    models: Sequence[str],
    extra: Mapping[str, str],
) -> list[OfflineMetricResult]:
    """One result per model per ranking metric, model-major in the order asked; a
    model whose users all lack truth gets undefined results, not silence."""
    names = {str(i): m for i, m in enumerate(models)}
    found = query.results(rows(con.execute(query.group_query("per_user"))), extra_convention=extra)
    results = complete(
        [replace(r, group=names[r.group]) for r in found],
        [(s.label, s.convention) for s in specs],
        models,
        extra,
        "no user of this file has truth",
    )
    order = {m: i for i, m in enumerate(models)}
    labels = {s.label: i for i, s in enumerate(specs)}
    return sorted(results, key=lambda r: (order.get(r.group, 0), labels.get(r.metric, 0)))


def compare_models(
    con: duckdb.DuckDBPyConnection,
    query: RankingQuery,
    models: Sequence[str],
    alpha: float,
    resamples: int,
    seed: int,
) -> list[PairedComparison]:
    """Every model after the first against the first on every ranking metric,
    paired over the users with a value under both, Holm-adjusted over them all."""
    import numpy as np

    raw: list[PairedComparison] = []
    for mc in query.columns:
        c = mc.column
        for j in range(1, len(models)):
            arrays = con.execute(
                f"SELECT a.{c} AS base, b.{c} AS other FROM per_user a JOIN per_user b "
                f"ON b.user_id = a.user_id WHERE a.grp = 0 AND b.grp = {j} "
                f"AND a.{c} IS NOT NULL AND b.{c} IS NOT NULL "
                # A fixed order: the seeded sign flips must meet the same users
                # every run, or the randomisation p-value changes between runs.
                "ORDER BY a.user_id"
            ).fetchnumpy()
            base = np.asarray(arrays["base"], dtype=float)
            other = np.asarray(arrays["other"], dtype=float)
            raw.append(
                paired_comparison(
                    mc.spec.label, models[j], models[0], base, other, alpha, resamples, seed
                )
            )
    return adjust_holm(raw)


def write_per_user(
    con: duckdb.DuckDBPyConnection, query: RankingQuery, models: Sequence[str], path: Path
) -> None:
    """The ``per_user`` values to a Parquet file (``.parquet``, ``.pq``), else CSV."""
    fmt = "PARQUET" if split_name(path)[1:] == ("parquet", None) else "CSV"
    names = " UNION ALL ".join(
        f"SELECT {i} AS grp, {quote_literal(m)} AS model" for i, m in enumerate(models)
    )
    cols = ", ".join(f"p.{mc.column} AS {quote_ident(mc.spec.label)}" for mc in query.columns)
    sql = (
        f"COPY (SELECT n.model, p.user_id, p.n_lists AS lists, {cols} FROM per_user p "
        f"JOIN ({names}) n ON n.grp = p.grp ORDER BY n.model, p.user_id) "
        f"TO {quote_literal(str(path))} (FORMAT {fmt})"
    )
    try:
        con.execute(sql)
    except Exception as exc:
        raise AbevalError(f"{path}: cannot write the per-user file: {first_line(exc)}") from None
