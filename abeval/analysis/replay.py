"""Offline metrics replayed from the logs of an experiment, per arm, inside the engine.

Each served request (``request_id``) is a ranked list: its items are the
impression rows, ranked by their logged ``position``. The relevance of each
(request, item) is its strongest event (by default purchase = 2, click = 1, else
0; configurable). R is the number of relevant items among those shown. The
population is the experiment's analysed users (:mod:`abeval.store.population`:
exposed users, contaminated users left out), and only their impressions from
their first exposure on count. Metrics are computed per request, averaged per
user, then per arm (:mod:`abeval.metrics.kernel`), so every ranking metric comes
back as :class:`~abeval.stats.sufficient.MeanStats` per arm, ready for the same
Welch comparison as the online metrics. Beyond-accuracy metrics (coverage,
Gini, entropy, novelty, diversity) are per arm over the top K of its requests.

All SQL is portable (DuckDB, PostgreSQL 15); every user-supplied value is a
bind parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abeval.errors import AbevalError, NotFoundError
from abeval.metrics import (
    BeyondInputs,
    Conventions,
    MetricResult,
    MetricSpec,
    beyond_query,
    parse_metrics,
    ranking_query,
)
from abeval.store.population import population_ctes
from abeval.store.shared_ctes import drop, materialize

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

DEFAULT_GAINS: Mapping[str, float] = {"purchase": 2.0, "click": 1.0}
DEFAULT_KS: tuple[int, ...] = (5, 10)
TIE_RULE = "logged position (equal positions count as tied)"


def default_metrics(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """precision, recall, MAP, NDCG, MRR and hit rate at each K, AUC, then coverage,
    Gini, entropy, novelty and diversity at each K."""
    names: list[str] = []
    for k in ks:
        names += [f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg", "mrr", "hit_rate")]
    names.append("auc")
    for k in ks:
        names += [f"{m}@{k}" for m in ("coverage", "gini", "entropy", "novelty", "diversity")]
    return names


@dataclass(frozen=True)
class ArmReplay:
    """What the replay saw in one arm."""

    arm: str
    users: int  # analysed users in the arm
    users_with_requests: int
    requests: int
    impressions: int  # impression rows counted (after duplicates were removed)
    duplicates_removed: int
    requests_with_tied_positions: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ReplayResult:
    """Offline metrics of one experiment, one :class:`MetricResult` per metric per arm."""

    experiment: str
    ks: tuple[int, ...]
    arms: tuple[ArmReplay, ...]
    metrics: tuple[MetricResult, ...]
    conventions: Mapping[str, str]
    gains: Mapping[str, float]
    relevance_pairs_not_shown: int = 0
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def get(self, metric: str, arm: str) -> MetricResult:
        """The result of ``metric`` (a label such as ``ndcg@10``) in ``arm``."""
        for m in self.metrics:
            if m.metric == metric and m.group == arm:
                return m
        raise KeyError((metric, arm))

    def by_metric(self) -> dict[str, dict[str, MetricResult]]:
        """{metric label: {arm: result}} in the order computed."""
        out: dict[str, dict[str, MetricResult]] = {}
        for m in self.metrics:
            out.setdefault(m.metric, {})[m.group] = m
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "ks": list(self.ks),
            "arms": [a.to_dict() for a in self.arms],
            "gains": dict(self.gains),
            "conventions": dict(self.conventions),
            "metrics": [m.to_dict() for m in self.metrics],
            "relevance_pairs_not_shown": self.relevance_pairs_not_shown,
            "warnings": list(self.warnings),
        }


def _rows(conn: Connection, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    from sqlalchemy import text

    return [dict(r._mapping) for r in conn.execute(text(sql), dict(params))]


def _gain_sql(gains: Mapping[str, float]) -> tuple[str, str, dict[str, Any]]:
    """(CASE expression, IN list, parameters) for the relevance of an event type."""
    params: dict[str, Any] = {}
    whens: list[str] = []
    names: list[str] = []
    for i, (event_type, gain) in enumerate(sorted(gains.items(), key=lambda kv: -kv[1])):
        params[f"rel_type_{i}"] = event_type
        params[f"rel_gain_{i}"] = float(gain)
        whens.append(
            f"WHEN event_type = :rel_type_{i} THEN CAST(:rel_gain_{i} AS DOUBLE PRECISION)"
        )
        names.append(f":rel_type_{i}")
    case = f"CASE {' '.join(whens)} ELSE CAST(0 AS DOUBLE PRECISION) END"
    return case, ", ".join(names), params


def replay_ctes(
    gains: Mapping[str, float] = DEFAULT_GAINS,
    *,
    post_exposure_only: bool = True,
) -> tuple[str, dict[str, Any]]:
    """The CTEs (after ``WITH``) that define ``ranked`` and ``judged`` for the kernels,
    plus ``r_imp`` (impressions of analysed users), ``r_rel`` (relevance per request
    and item) and the beyond-accuracy inputs ``r_catalogue``, ``r_interactions``,
    ``r_popularity``; and the bind parameters besides ``:experiment``."""
    case, in_list, params = _gain_sql(gains)
    after = "AND e.ts >= p.first_ts" if post_exposure_only else ""
    # An item shown more than once in a request counts once, at its first (best)
    # position (``copies`` says how often it was shown; unless the convention is
    # ``duplicates=dedupe`` a repeat is an error, raised before any metric reads
    # ``ranked``). An aggregate, not a sorted window over every impression.
    first = (
        "SELECT grp, MIN(user_id) AS user_id, list_id, item_id, MIN(position) AS position, "
        "COUNT(*) AS copies FROM r_imp GROUP BY grp, list_id, item_id"
    )
    ctes = [
        population_ctes(),
        "r_imp AS (SELECT p.arm AS grp, e.user_id, e.request_id AS list_id, e.item_id, "
        "e.position FROM exp_events e JOIN population p ON p.user_id = e.user_id "
        "WHERE e.event_type = 'impression' AND e.request_id IS NOT NULL "
        f"AND e.item_id IS NOT NULL AND e.position IS NOT NULL {after})",
        f"r_rel AS (SELECT request_id AS list_id, item_id, MAX({case}) AS gain FROM exp_events "
        f"WHERE event_type IN ({in_list}) AND request_id IS NOT NULL AND item_id IS NOT NULL "
        "GROUP BY request_id, item_id)",
        f"r_first AS ({first})",
        "ranked AS (SELECT f.grp, f.user_id, f.list_id, f.item_id, f.position AS rank, f.copies, "
        "COALESCE(r.gain, CAST(0 AS DOUBLE PRECISION)) AS gain FROM r_first f "
        "LEFT JOIN r_rel r ON r.list_id = f.list_id AND r.item_id = f.item_id)",
        "judged AS (SELECT list_id, gain FROM ranked WHERE gain > 0)",
        "r_catalogue AS (SELECT DISTINCT item_id FROM exp_events WHERE item_id IS NOT NULL)",
        "r_interactions AS (SELECT DISTINCT e.user_id, e.item_id FROM exp_events e "
        f"JOIN population p ON p.user_id = e.user_id WHERE e.event_type IN ({in_list}) "
        f"AND e.item_id IS NOT NULL {after})",
        "r_popularity AS (SELECT item_id, CAST(COUNT(*) AS DOUBLE PRECISION) / "
        "(SELECT COUNT(*) FROM population) AS share FROM r_interactions GROUP BY item_id)",
    ]
    return ",\n".join(ctes), params


# CTEs that several replay queries share, computed once per replay.
_SHARED = ("population", "r_imp", "r_rel", "ranked", "r_catalogue", "r_interactions")


_ARM_COUNTS = """r_arms AS (SELECT arm AS grp, COUNT(*) AS users FROM population GROUP BY arm),
r_lists AS (
    SELECT grp, user_id, list_id, COUNT(*) AS impressions FROM r_imp
    GROUP BY grp, user_id, list_id
),
r_imp_arm AS (
    SELECT grp, COUNT(DISTINCT user_id) AS users_with_requests,
           COUNT(DISTINCT list_id) AS requests, SUM(impressions) AS impressions
    FROM r_lists GROUP BY grp
),
r_dups AS (SELECT grp, SUM(copies - 1) AS extra FROM ranked GROUP BY grp),
r_ties AS (
    SELECT grp, COUNT(DISTINCT list_id) AS tied FROM (
        SELECT grp, list_id, rank FROM ranked GROUP BY grp, list_id, rank HAVING COUNT(*) > 1
    ) t GROUP BY grp
)
SELECT a.grp, a.users, COALESCE(i.users_with_requests, 0) AS users_with_requests,
       COALESCE(i.requests, 0) AS requests, COALESCE(i.impressions, 0) AS impressions,
       COALESCE(d.extra, 0) AS duplicates, COALESCE(t.tied, 0) AS tied
FROM r_arms a
LEFT JOIN r_imp_arm i ON i.grp = a.grp
LEFT JOIN r_dups d ON d.grp = a.grp
LEFT JOIN r_ties t ON t.grp = a.grp
ORDER BY a.grp"""


def replay(
    conn: Connection,
    experiment: str,
    *,
    k: Sequence[int] = DEFAULT_KS,
    metrics: str | Sequence[str] | None = None,
    gains: Mapping[str, float] | None = None,
    conventions: Conventions | None = None,
    post_exposure_only: bool = True,
) -> ReplayResult:
    """Replay offline metrics for ``experiment`` from the events in the store.

    ``conn`` is a SQLAlchemy connection to the store (DuckDB or PostgreSQL).
    ``metrics`` are names such as ``ndcg@10`` (default: :func:`default_metrics`
    at each ``k``); ``gains`` maps event types to relevance (default purchase 2,
    click 1); ``conventions`` sets the AP denominator, NDCG gain, empty-list rule
    and duplicate rule. An item shown twice in one request is an error unless
    ``conventions.duplicates == "dedupe"`` (then its first position counts).
    Raises :class:`~abeval.errors.NotFoundError` for an unknown experiment.
    """
    conventions = conventions or Conventions()
    ks = sorted({int(x) for x in k})
    gains = dict(gains or DEFAULT_GAINS)
    if not gains or any(g <= 0 for g in gains.values()):
        raise AbevalError("every relevance gain must be positive, as in purchase=2, click=1")
    specs = parse_metrics(metrics or default_metrics(ks), ks, conventions)
    unsupported = [s.label for s in specs if s.kind == "rating" or s.name == "serendipity"]
    if unsupported:
        raise AbevalError(
            f"{', '.join(unsupported)} cannot be replayed from logs; "
            "use `abeval evaluate` with files for rating and serendipity metrics"
        )
    base = {"experiment": experiment}

    ctes, params = replay_ctes(gains, post_exposure_only=post_exposure_only)
    params.update(base)
    ctes, temporary = materialize(conn, ctes, _SHARED, params, "abeval_replay_")
    try:
        return _replay(
            conn, experiment, ctes, params, specs, conventions, gains, post_exposure_only
        )
    finally:
        drop(conn, temporary)


def _replay(
    conn: Connection,
    experiment: str,
    ctes: str,
    params: dict[str, Any],
    specs: list[MetricSpec],
    conventions: Conventions,
    gains: dict[str, float],
    post_exposure_only: bool,
) -> ReplayResult:
    base = {"experiment": experiment}
    ranking = [s for s in specs if s.kind == "ranking"]
    beyond = [s for s in specs if s.kind == "beyond"]
    arm_rows = _rows(conn, f"WITH {ctes}, {_ARM_COUNTS}", params)
    if not arm_rows:
        known = _rows(conn, "SELECT COUNT(*) AS n FROM events WHERE experiment = :experiment", base)
        if not known or int(known[0]["n"]) == 0:
            raise NotFoundError(
                f"no events for experiment {experiment!r}; "
                "list experiments with `abeval experiments`"
            )
    duplicates = sum(int(r["duplicates"]) for r in arm_rows)
    warnings: list[str] = []
    if duplicates:
        example = _rows(
            conn,
            f"WITH {ctes} SELECT list_id, item_id, COUNT(*) AS c, MIN(position) AS first_pos, "
            "MAX(position) AS last_pos FROM r_imp GROUP BY list_id, item_id HAVING COUNT(*) > 1 "
            "ORDER BY list_id, item_id LIMIT 1",
            params,
        )[0]
        if conventions.duplicates == "error":
            raise AbevalError(
                f"experiment {experiment!r}: request {example['list_id']!r} shows item "
                f"{example['item_id']!r} twice (positions {example['first_pos']} and "
                f"{example['last_pos']}; {duplicates} repeated impressions in all); "
                "count each item once at its first position with duplicates=dedupe "
                "(--duplicates dedupe)"
            )
        warnings.append(
            f"{duplicates} repeated impressions of an item in the same request counted once, "
            "at their first position"
        )
    tied = sum(int(r["tied"]) for r in arm_rows)
    if tied:
        warnings.append(
            f"{tied} requests show two items at the same position; tied items share their rank"
        )

    extra = {"ties": TIE_RULE, "relevance": _gains_text(gains)}
    results: list[MetricResult] = []
    if ranking:
        query = ranking_query(ranking)
        rows = _rows(conn, f"WITH {ctes},\n{query.ctes}\n{query.group_query()}", params)
        results += query.results(rows, extra_convention=extra)
    if beyond:
        inputs = BeyondInputs(
            ranked="ranked",
            catalogue="r_catalogue",
            popularity="r_popularity",
            interactions="r_interactions",
            similarity="cooccurrence",
            number_keys=conn.dialect.name == "duckdb",
        )
        bq = beyond_query(beyond, inputs)
        rows = _rows(conn, bq.sql(ctes), params)
        groups = {
            str(r["grp"]): (int(r["users_with_requests"]), int(r["requests"])) for r in arm_rows
        }
        convention = dict(extra)
        convention["catalogue"] = "all items seen for the experiment"
        convention["reference"] = "clicks and purchases of the analysed users (popularity)"
        convention["similarity"] = "co-occurrence cosine of the analysed users' interactions"
        results += bq.results(rows, groups, extra_convention=convention)
    results = _complete(results, specs, [str(r["grp"]) for r in arm_rows], extra)

    unmatched = _rows(
        conn,
        f"WITH {ctes} SELECT COUNT(*) AS n FROM r_rel r WHERE NOT EXISTS "
        "(SELECT 1 FROM r_imp i WHERE i.list_id = r.list_id AND i.item_id = r.item_id)",
        params,
    )
    conv = conventions.to_dict()
    conv.update(extra)
    conv["average"] = "per request, then per user, then over the users of the arm"
    conv["population"] = (
        "analysed users; impressions from their first exposure on"
        if (post_exposure_only)
        else "analysed users; all their impressions"
    )
    return ReplayResult(
        experiment=experiment,
        ks=tuple(sorted({s.k for s in specs if s.k is not None})),
        arms=tuple(
            ArmReplay(
                arm=str(r["grp"]),
                users=int(r["users"]),
                users_with_requests=int(r["users_with_requests"]),
                requests=int(r["requests"]),
                impressions=int(r["impressions"])
                - (int(r["duplicates"]) if conventions.duplicates == "dedupe" else 0),
                duplicates_removed=int(r["duplicates"])
                if conventions.duplicates == "dedupe"
                else 0,
                requests_with_tied_positions=int(r["tied"]),
            )
            for r in arm_rows
        ),
        metrics=tuple(results),
        conventions=conv,
        gains=gains,
        relevance_pairs_not_shown=int(unmatched[0]["n"]) if unmatched else 0,
        warnings=tuple(warnings),
    )


def _gains_text(gains: Mapping[str, float]) -> str:
    parts = [f"{name} {gain:g}" for name, gain in sorted(gains.items(), key=lambda kv: -kv[1])]
    return "strongest event per (request, item): " + ", ".join(parts) + ", else 0"


def _complete(
    results: list[MetricResult],
    specs: Sequence[MetricSpec],
    arms: Sequence[str],
    extra: Mapping[str, str],
) -> list[MetricResult]:
    """One result per metric per arm, in the order asked: an arm without requests
    gets an undefined result rather than nothing."""
    by = {(r.metric, r.group): r for r in results}
    out: list[MetricResult] = []
    for spec in specs:
        for arm in arms:
            found = by.get((spec.label, arm))
            if found is None:
                convention = dict(spec.convention)
                convention.update(extra)
                found = MetricResult(
                    metric=spec.label,
                    group=arm,
                    value=None,
                    convention=convention,
                    status="undefined",
                    message="the arm has no impressions",
                )
            out.append(found)
    return out
