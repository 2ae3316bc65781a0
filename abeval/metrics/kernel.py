"""The SQL kernel of the ranking metrics: lists in, per-user and per-group sums out.

Input relations (defined by the caller as tables or CTEs):

- ``ranked(grp, user_id, list_id, item_id, rank, gain)``: every item of every
  list, ``rank`` an integer 1..n after tie-breaking (log replay: the logged
  position, where ties count together), ``gain`` the relevance grade (0 = not
  relevant). ``grp`` is the arm (replay) or the model (``evaluate``).
- ``judged(list_id, gain)``: all relevant items of each list (gain > 0): in
  replay the relevant items among those shown, in ``evaluate`` the user's
  relevant held-out items. R and IDCG come from here.
- optionally ``nonrelevant(list_id, item_id)``: the judged non-relevant items of
  each list, for bpref; without it every ranked item that is not relevant counts
  as judged (log replay: every item shown was judged).

The kernel computes per-list aggregates in one pass (relevant rows only, plus a
pass over all rows when AUC is asked for), applies each metric's per-list
formula (:class:`~abeval.metrics.base.MetricDefinition.per_list`), averages per
user, and, in :meth:`RankingQuery.group_query`, returns per group the number of
users, Σ and the centred Σ(x − x̄)² of the per-user values: the sufficient
statistics of :class:`~abeval.stats.sufficient.MeanStats`.

The SQL is portable (DuckDB and PostgreSQL 15): CTEs, window functions with
``RANGE`` frames, ``CASE``, ``LN``; no dialect-only syntax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abeval.metrics.base import DOUBLE, Aggregate, ListAggregates, as_double, gain_sql, log2
from abeval.metrics.results import OfflineMetricResult
from abeval.metrics.spec import MetricSpec
from abeval.stats.sufficient import MeanStats


def _within(k: int | None, rank: str = "rank") -> str:
    return "1 = 1" if k is None else f"{rank} <= {int(k)}"


def _hits_sql(agg: Aggregate) -> str:
    if agg.kind == "hits":
        return f"SUM(CASE WHEN {_within(agg.k)} THEN 1 ELSE 0 END)"
    if agg.kind == "ap_sum":
        return f"SUM(CASE WHEN {_within(agg.k)} THEN {as_double('cum_hits')} / rank ELSE 0 END)"
    if agg.kind == "dcg":
        assert agg.gain is not None
        return (
            f"SUM(CASE WHEN {_within(agg.k)} THEN {gain_sql(agg.gain, 'gain')} "
            f"/ {log2('rank + 1')} ELSE 0 END)"
        )
    if agg.kind == "first_relevant":
        return "MIN(rank)"
    raise ValueError(agg.kind)


def _idcg_sql(agg: Aggregate) -> str:
    assert agg.gain is not None
    return (
        f"SUM(CASE WHEN {_within(agg.k, 'irank')} THEN {gain_sql(agg.gain, 'gain')} "
        f"/ {log2('irank + 1')} ELSE 0 END)"
    )


@dataclass(frozen=True)
class MetricColumn:
    spec: MetricSpec
    column: str  # per-user mean in the user relation; ``<column>_lists`` counts its lists
    left_out: tuple[str, ...]  # reasons that apply: lists_without_relevant, lists_without_pairs


@dataclass(frozen=True)
class RankingQuery:
    """The kernel's SQL for a set of ranking metrics.

    ``ctes`` are CTE definitions (no leading ``WITH``) that read ``ranked`` and
    ``judged`` and end in the per-user relation ``user_relation`` with columns
    ``grp, user_id, n_lists, n_lists_without_relevant, n_lists_without_pairs``
    and, per metric, ``<column>`` (the user's mean over the lists that count)
    and ``<column>_lists``.
    """

    columns: tuple[MetricColumn, ...]
    ctes: str
    user_relation: str = "k_user_values"

    def group_query(self, source: str | None = None) -> str:
        """SELECT the per-group sums from the per-user relation ``source``."""
        src = source or self.user_relation
        parts = [
            "grp",
            "COUNT(*) AS users",
            "SUM(n_lists) AS lists",
            "SUM(n_lists_without_relevant) AS lists_without_relevant",
            "SUM(n_lists_without_pairs) AS lists_without_pairs",
        ]
        for mc in self.columns:
            c = mc.column
            parts += [
                f"COUNT({c}) AS {c}__n",
                f"COALESCE(SUM({c}), 0) AS {c}__sum",
                f"COALESCE(VAR_POP({c}), 0) * COUNT({c}) AS {c}__ss",
                f"COALESCE(SUM({c}_lists), 0) AS {c}__lists",
            ]
        return f"SELECT {', '.join(parts)} FROM {src} GROUP BY grp"

    def results(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        extra_convention: Mapping[str, str] | None = None,
    ) -> list[OfflineMetricResult]:
        """Turn the rows of :meth:`group_query` into one result per metric per group."""
        out: list[OfflineMetricResult] = []
        for row in sorted(rows, key=lambda r: str(r["grp"])):
            users_total = int(row["users"])
            for mc in self.columns:
                c = mc.column
                stats = MeanStats(
                    n=int(row[f"{c}__n"]), sum=float(row[f"{c}__sum"]), ss=float(row[f"{c}__ss"])
                )
                left_out = {reason: int(row[reason] or 0) for reason in mc.left_out}
                left_out["users_without_value"] = users_total - stats.n
                convention = dict(mc.spec.convention)
                convention.update(extra_convention or {})
                out.append(
                    OfflineMetricResult.of_stats(
                        metric=mc.spec.label,
                        group=str(row["grp"]),
                        stats=stats,
                        lists=int(row[f"{c}__lists"] or 0),
                        left_out=left_out,
                        convention=convention,
                    )
                )
        return out


def ranking_query(
    specs: Sequence[MetricSpec],
    *,
    ranked: str = "ranked",
    judged: str = "judged",
    lists: str | None = None,
    nonrelevant: str | None = None,
    list_ranks: bool = False,
) -> RankingQuery:
    """Build the kernel for ``specs`` (ranking metrics only) over ``ranked`` and ``judged``:
    the per-list aggregates the metrics need, each metric's per-list value, then
    each user's mean. ``lists``: a relation holding ``ranked``'s distinct
    ``(grp, user_id, list_id)`` already (the replay's ``r_lists``), else they are
    grouped from ``ranked``. ``nonrelevant``: the judged non-relevant items
    (module docstring). ``list_ranks``: ``lists`` also holds, per list, its ``items``
    and ``contiguous`` (1 where its ranks are exactly 1..items, no two alike), and
    AUC reads those lists from their relevant rows alone (:func:`_auc_cte`)."""
    aggs = ListAggregates()
    columns, exprs = _metric_columns(specs, aggs)
    needed = sorted(aggs.needed, key=lambda a: a.column)
    want_auc = any(a.kind in ("auc_pairs", "auc_correct") for a in needed)
    ctes = _per_list_ctes(needed, want_auc, ranked, judged, lists, nonrelevant, list_ranks)
    pairs_flag = "CASE WHEN r > 0 AND auc_pairs = 0 THEN 1 ELSE 0 END" if want_auc else "0"
    ctes.append(
        "k_list_values AS (SELECT grp, user_id, list_id, r, "
        f"{pairs_flag} AS without_pairs, {', '.join(exprs)} FROM k_per_list)"
    )
    ctes.append(_user_values_cte(columns))
    return RankingQuery(columns=tuple(columns), ctes=",\n".join(ctes))


def _metric_columns(
    specs: Sequence[MetricSpec], aggs: ListAggregates
) -> tuple[list[MetricColumn], list[str]]:
    """Each metric's column and its per-list SQL expression (NULL where the list
    does not count), in the order asked, each column once; ``aggs`` records the
    aggregates the expressions read."""
    r_col = aggs.relevant()
    columns: list[MetricColumn] = []
    exprs: list[str] = []
    for spec in specs:
        d = spec.definition
        if d.kind != "ranking" or d.per_list is None:
            raise ValueError(f"{spec.label} is not a ranking metric")
        column = "m_" + spec.column
        if any(c.column == column for c in columns):
            continue
        value = d.per_list(spec, aggs)
        reasons: list[str] = []
        cases: list[str] = []
        if d.skips_empty:
            if spec.conventions.empty == "skip":
                cases.append(f"WHEN {r_col} = 0 THEN NULL")
                reasons.append("lists_without_relevant")
            else:
                cases.append(f"WHEN {r_col} = 0 THEN 0")
        if d.undefined is not None:
            cond_reason = d.undefined(spec, aggs)
            if cond_reason is not None:
                cond, reason = cond_reason
                cases.append(f"WHEN {cond} THEN NULL")
                reasons.append(reason)
        expr = f"CASE {' '.join(cases)} ELSE {value} END" if cases else value
        exprs.append(f"CAST({expr} AS {DOUBLE}) AS {column}")
        columns.append(MetricColumn(spec=spec, column=column, left_out=tuple(reasons)))
    return columns, exprs


def _per_list_ctes(
    needed: list[Aggregate],
    want_auc: bool,
    ranked: str,
    judged: str,
    lists: str | None,
    nonrelevant: str | None = None,
    list_ranks: bool = False,
) -> list[str]:
    """CTEs ending in ``k_per_list``: one row per list with R and every aggregate in
    ``needed`` (hits, AP sums, DCG and first relevant rank from the relevant rows,
    IDCG from ``judged``, AUC pairs from a join of the relevant rows to their list)."""
    hit_aggs = [a for a in needed if a.kind in ("hits", "ap_sum", "dcg", "first_relevant")]
    idcg_aggs = [a for a in needed if a.kind == "idcg"]
    grouped = f"{ranked} GROUP BY grp, user_id, list_id" if lists is None else lists
    shape = ", items, contiguous" if lists is not None and list_ranks and want_auc else ""
    ctes: list[str] = [f"k_lists AS (SELECT grp, user_id, list_id{shape} FROM {grouped})"]
    per_list_cols = [
        "l.grp",
        "l.user_id",
        "l.list_id",
        f"{as_double('COALESCE(j.r, 0)')} AS r",
    ]
    joins = ["k_lists l", "LEFT JOIN k_judged j ON j.list_id = l.list_id"]
    if hit_aggs:
        ctes += _hits_ctes(hit_aggs, ranked)
        joins.append("LEFT JOIN k_hits h ON h.grp = l.grp AND h.list_id = l.list_id")
        for a in hit_aggs:
            if a.kind == "first_relevant":
                per_list_cols.append(f"{as_double('h.first_relevant')} AS first_relevant")
            else:
                per_list_cols.append(f"{as_double(f'COALESCE(h.{a.column}, 0)')} AS {a.column}")
    ctes += _judged_ctes(idcg_aggs, judged)
    for a in idcg_aggs:
        per_list_cols.append(f"{as_double(f'COALESCE(j.{a.column}, 0)')} AS {a.column}")
    for a in needed:
        if a.kind in _R_BASED:
            ctes += _R_BASED[a.kind](ranked, nonrelevant)
            alias = f"x_{a.column}"
            joins.append(
                f"LEFT JOIN k_{a.column} {alias} ON {alias}.grp = l.grp "
                f"AND {alias}.list_id = l.list_id"
            )
            per_list_cols.append(f"{as_double(f'COALESCE({alias}.{a.column}, 0)')} AS {a.column}")
    if want_auc and shape:
        ctes += _auc_contiguous_ctes(ranked)
        joins.append("LEFT JOIN k_auc a ON a.grp = l.grp AND a.list_id = l.list_id")
        joins.append("LEFT JOIN k_auc_rel ar ON ar.grp = l.grp AND ar.list_id = l.list_id")
        # a list of ranks 1..n: R (n - R) pairs, and R n - Σ rank - R (R - 1) / 2 ranked
        # right (each relevant item above the n - rank items below it, less the
        # relevant ones among them)
        rel, rank_sum = "COALESCE(ar.rel, 0)", "COALESCE(ar.rank_sum, 0)"
        pairs = f"{rel} * (l.items - {rel})"
        correct = f"{rel} * l.items - {rank_sum} - {rel} * ({rel} - 1) / 2"
        for column, quick in (("auc_pairs", pairs), ("auc_correct", correct)):
            value = f"CASE WHEN l.contiguous = 1 THEN {quick} ELSE COALESCE(a.{column}, 0) END"
            per_list_cols.append(f"{as_double(value)} AS {column}")
    elif want_auc:
        ctes.append(_auc_cte(ranked))
        joins.append("LEFT JOIN k_auc a ON a.grp = l.grp AND a.list_id = l.list_id")
        per_list_cols.append(f"{as_double('COALESCE(a.auc_pairs, 0)')} AS auc_pairs")
        per_list_cols.append(f"{as_double('COALESCE(a.auc_correct, 0)')} AS auc_correct")
    ctes.append(f"k_per_list AS (SELECT {', '.join(per_list_cols)} FROM {' '.join(joins)})")
    return ctes


def _hits_ctes(hit_aggs: list[Aggregate], ranked: str) -> list[str]:
    """``k_rel`` (the relevant rows with the hits so far) and ``k_hits`` (per list)."""
    cols = ", ".join(f"{_hits_sql(a)} AS {a.column}" for a in hit_aggs)
    return [
        "k_rel AS (SELECT grp, list_id, rank, gain, COUNT(*) OVER (PARTITION BY grp, list_id "
        "ORDER BY rank RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum_hits "
        f"FROM {ranked} WHERE gain > 0)",
        f"k_hits AS (SELECT grp, list_id, {cols} FROM k_rel GROUP BY grp, list_id)",
    ]


def _judged_ctes(idcg_aggs: list[Aggregate], judged: str) -> list[str]:
    """``k_ideal`` (the relevant items in their ideal order) and ``k_judged`` (R and
    IDCG per list)."""
    idcg_cols = "".join(f", {_idcg_sql(a)} AS {a.column}" for a in idcg_aggs)
    return [
        "k_ideal AS (SELECT list_id, gain, ROW_NUMBER() OVER (PARTITION BY list_id "
        f"ORDER BY gain DESC) AS irank FROM {judged} WHERE gain > 0)",
        f"k_judged AS (SELECT list_id, COUNT(*) AS r{idcg_cols} FROM k_ideal GROUP BY list_id)",
    ]


def _hits_r_ctes(ranked: str, _nonrelevant: str | None) -> list[str]:
    """``k_hits_r``: per list, the relevant items ranked within R (Rprec)."""
    return [
        "k_hits_r AS (SELECT x.grp, x.list_id, COUNT(*) AS hits_r FROM "
        f"{ranked} x JOIN k_judged j ON j.list_id = x.list_id "
        "WHERE x.gain > 0 AND x.rank <= j.r GROUP BY x.grp, x.list_id)"
    ]


def _bpref_ctes(ranked: str, nonrelevant: str | None) -> list[str]:
    """``k_bpref_sum``: per list, Σ over its relevant ranked items of
    1 − min(n_r, R) / min(N, R) (n_r = 0: 1), from ``k_nonrel`` (the judged
    non-relevant ranked items), ``k_nonrel_n`` (N per list) and ``k_above`` (n_r)."""
    if nonrelevant is None:
        nonrel = f"SELECT grp, list_id, rank FROM {ranked} WHERE NOT gain > 0"
        counts = f"SELECT list_id, COUNT(*) AS n FROM {ranked} WHERE NOT gain > 0 GROUP BY list_id"
    else:
        nonrel = (
            f"SELECT x.grp, x.list_id, x.rank FROM {ranked} x WHERE NOT x.gain > 0 AND "
            f"EXISTS (SELECT 1 FROM {nonrelevant} n WHERE n.list_id = x.list_id "
            "AND n.item_id = x.item_id)"
        )
        counts = f"SELECT list_id, COUNT(*) AS n FROM {nonrelevant} GROUP BY list_id"
    least = f"LEAST(a.above, j.r) / LEAST({as_double('c.n')}, j.r)"
    return [
        f"k_nonrel AS ({nonrel})",
        f"k_nonrel_n AS ({counts})",
        "k_above AS (SELECT r.grp, r.list_id, r.item_id, COUNT(n.rank) AS above "
        f"FROM {ranked} r LEFT JOIN k_nonrel n ON n.grp = r.grp AND n.list_id = r.list_id "
        "AND n.rank < r.rank WHERE r.gain > 0 GROUP BY r.grp, r.list_id, r.item_id)",
        "k_bpref_sum AS (SELECT a.grp, a.list_id, SUM(CASE WHEN a.above = 0 THEN 1.0 "
        f"ELSE 1.0 - {least} END) AS bpref_sum FROM k_above a "
        "JOIN k_judged j ON j.list_id = a.list_id "
        "LEFT JOIN k_nonrel_n c ON c.list_id = a.list_id GROUP BY a.grp, a.list_id)",
    ]


#: Aggregates that read R (``k_judged``), each from its own CTEs.
_R_BASED = {"hits_r": _hits_r_ctes, "bpref_sum": _bpref_ctes}


def _auc_contiguous_ctes(ranked: str) -> list[str]:
    """``k_auc_rel`` (per list: its relevant items and the sum of their ranks) and
    ``k_auc`` (:func:`_auc_cte`) for the lists whose ranks are not 1..n only."""
    return [
        "k_auc_rel AS (SELECT grp, list_id, COUNT(*) AS rel, SUM(rank) AS rank_sum "
        f"FROM {ranked} WHERE gain > 0 GROUP BY grp, list_id)",
        "k_auc_lists AS (SELECT DISTINCT grp, list_id FROM k_lists WHERE contiguous = 0)",
        _auc_cte(ranked, "k_auc_lists"),
    ]


def _auc_cte(ranked: str, only: str | None = None) -> str:
    """``k_auc``: per list, the (relevant, non-relevant) pairs and those ranked right."""
    # Each relevant item against every item of its list: a join from the few
    # relevant rows rather than a sorted window over every row (5x faster on
    # logged lists, and exact with tied or missing positions). ``only``: the lists
    # (grp, list_id) to compute.
    within = "" if only is None else f"JOIN {only} o ON o.grp = r.grp AND o.list_id = r.list_id "
    return (
        "k_auc AS (SELECT r.grp, r.list_id, "
        "SUM(CASE WHEN a.gain > 0 THEN 0 ELSE 1 END) AS auc_pairs, "
        "SUM(CASE WHEN a.gain > 0 THEN 0.0 WHEN a.rank > r.rank THEN 1.0 "
        "WHEN a.rank = r.rank THEN 0.5 ELSE 0.0 END) AS auc_correct "
        f"FROM {ranked} r {within}JOIN {ranked} a ON a.grp = r.grp AND a.list_id = r.list_id "
        "WHERE r.gain > 0 GROUP BY r.grp, r.list_id)"
    )


def _user_values_cte(columns: list[MetricColumn]) -> str:
    """``k_user_values``: per user, the lists, the lists left out, and each metric's
    mean over the user's lists that count."""
    user_cols = [
        "grp",
        "user_id",
        "COUNT(*) AS n_lists",
        "SUM(CASE WHEN r = 0 THEN 1 ELSE 0 END) AS n_lists_without_relevant",
        "SUM(without_pairs) AS n_lists_without_pairs",
    ]
    for mc in columns:
        user_cols.append(f"AVG({mc.column}) AS {mc.column}")
        user_cols.append(f"COUNT({mc.column}) AS {mc.column}_lists")
    return (
        f"k_user_values AS (SELECT {', '.join(user_cols)} FROM k_list_values GROUP BY grp, user_id)"
    )
