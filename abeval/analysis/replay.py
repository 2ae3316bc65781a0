"""Offline metrics replayed from the logs of an experiment, per arm, inside the engine.

Each served request (``request_id``) is a ranked list: its items are the
impression rows, ranked by their logged ``position``. The relevance of each
(request, item) is its strongest event (by default purchase = 2, click = 1, else
0; configurable). R is the number of relevant items among those shown. The
population is the experiment's analysed users (:mod:`abeval.store.sql.population`:
exposed users, contaminated users left out), and only their impressions from
their first exposure on count. Metrics are computed per request, averaged per
user, then per arm (:mod:`abeval.metrics.kernel`), so every ranking metric comes
back as :class:`~abeval.stats.sufficient.MeanStats` per arm, ready for the same
Welch comparison as the online metrics. Beyond-accuracy metrics (coverage,
Gini, entropy, novelty, diversity) are per arm over the top K of its requests.

This module decides what is replayed (which metrics, under which conventions)
and turns rows into results; the SQL lives in :mod:`abeval.store.sql.replay`
(the lists) and the metric kernels (:mod:`abeval.metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abeval.errors import AbevalError, NotFoundError
from abeval.metrics import (
    BeyondInputs,
    Conventions,
    MetricSpec,
    OfflineMetricResult,
    beyond_query,
    parse_offline_metrics,
    ranking_query,
)
from abeval.metrics.results import complete
from abeval.store.sql.population import Window
from abeval.store.sql.replay import ReplaySource, open_replay
from abeval.store.sql.replay_parts import BEYOND_RELATIONS

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

DEFAULT_GAINS: Mapping[str, float] = {"purchase": 2.0, "click": 1.0}
DEFAULT_KS: tuple[int, ...] = (5, 10)
TIE_RULE = "logged position (equal positions count as tied)"

# One arm's counts from :meth:`abeval.store.sql.replay.ReplaySource.arm_counts`.
ArmRow = dict[str, Any]


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
    """Offline metrics of one experiment, one :class:`OfflineMetricResult` per metric per arm."""

    experiment: str
    ks: tuple[int, ...]
    arms: tuple[ArmReplay, ...]
    metrics: tuple[OfflineMetricResult, ...]
    conventions: Mapping[str, str]
    gains: Mapping[str, float]
    relevance_pairs_not_shown: int = 0
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def get(self, metric: str, arm: str) -> OfflineMetricResult:
        """The result of ``metric`` (a label such as ``ndcg@10``) in ``arm``."""
        for m in self.metrics:
            if m.metric == metric and m.group == arm:
                return m
        raise KeyError((metric, arm))

    def by_metric(self) -> dict[str, dict[str, OfflineMetricResult]]:
        """{metric label: {arm: result}} in the order computed."""
        out: dict[str, dict[str, OfflineMetricResult]] = {}
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


def replay(
    conn: Connection,
    experiment: str,
    *,
    k: Sequence[int] = DEFAULT_KS,
    metrics: str | Sequence[str] | None = None,
    gains: Mapping[str, float] | None = None,
    conventions: Conventions | None = None,
    post_exposure_only: bool = True,
    window: Window | None = None,
    population: str | None = None,
    shown_once: bool = False,
) -> ReplayResult:
    """Replay offline metrics for ``experiment`` from the events in the store.

    ``conn`` is a SQLAlchemy connection to the store (DuckDB or PostgreSQL).
    ``metrics`` are names such as ``ndcg@10`` (default: :func:`default_metrics`
    at each ``k``); ``gains`` maps event types to relevance (default purchase 2,
    click 1); ``conventions`` sets the AP denominator, NDCG gain, empty-list rule
    and duplicate rule; ``window`` keeps only the events inside it
    (docs/metrics.md#analysis-window). An item shown twice in one request is an error unless
    ``conventions.duplicates == "dedupe"`` (then its first position counts).
    ``population`` names a table on ``conn`` already holding the experiment's
    analysed population (the report's online pass computes it), so that it is
    not computed twice; ``shown_once`` says that no item was shown twice in one
    request among these events (the report's health counts), so the lists are
    read without grouping the impressions. Raises
    :class:`~abeval.errors.NotFoundError` for an unknown experiment.
    """
    conventions = conventions or Conventions()
    ks = sorted({int(x) for x in k})
    gains = _checked(gains)
    specs = _replayable(parse_offline_metrics(metrics or default_metrics(ks), ks, conventions))
    with open_replay(
        conn,
        experiment,
        gains,
        post_exposure_only=post_exposure_only,
        window=window,
        population=population,
        shown_once=shown_once,
    ) as source:
        return _replay(source, experiment, specs, conventions, gains, post_exposure_only)


def _checked(gains: Mapping[str, float] | None) -> dict[str, float]:
    checked = dict(gains or DEFAULT_GAINS)
    if not checked or any(g <= 0 for g in checked.values()):
        raise AbevalError("every relevance gain must be positive, as in purchase=2, click=1")
    return checked


def _replayable(specs: list[MetricSpec]) -> list[MetricSpec]:
    unsupported = [s.label for s in specs if s.kind == "rating" or s.name == "serendipity"]
    if unsupported:
        raise AbevalError(
            f"{', '.join(unsupported)} cannot be replayed from logs; "
            "use `abeval evaluate` with files for rating and serendipity metrics"
        )
    return specs


def _replay(
    source: ReplaySource,
    experiment: str,
    specs: list[MetricSpec],
    conventions: Conventions,
    gains: dict[str, float],
    post_exposure_only: bool,
) -> ReplayResult:
    """Count the lists per arm, check them, compute every metric, and say how."""
    arms, not_shown = _arm_counts(source, experiment)
    warnings = _list_warnings(source, experiment, arms, conventions)
    extra = {"ties": TIE_RULE, "relevance": _gains_text(gains)}
    results = _ranking_results(source, specs, extra) + _beyond_results(source, specs, arms, extra)
    labels = [(s.label, s.convention) for s in specs]
    results = complete(
        results, labels, [a["arm"] for a in arms], extra, "the arm has no impressions"
    )
    return ReplayResult(
        experiment=experiment,
        ks=tuple(sorted({s.k for s in specs if s.k is not None})),
        arms=tuple(_arm_replay(a, conventions) for a in arms),
        metrics=tuple(results),
        conventions=_conventions(conventions, extra, post_exposure_only),
        gains=gains,
        relevance_pairs_not_shown=not_shown,
        warnings=tuple(warnings),
    )


def _arm_counts(source: ReplaySource, experiment: str) -> tuple[list[ArmRow], int]:
    """The counts per arm and the relevant pairs not shown; an experiment without a
    single event is not found."""
    arms, not_shown = source.counts()
    if not arms and not source.experiment_has_events():
        raise NotFoundError(
            f"no events for experiment {experiment!r}; list experiments with `abeval experiments`"
        )
    return arms, not_shown


def _list_warnings(
    source: ReplaySource, experiment: str, arms: list[ArmRow], conventions: Conventions
) -> list[str]:
    """What the lists do that a metric hides: repeated items (an error unless the
    convention is ``duplicates=dedupe``) and tied positions."""
    warnings: list[str] = []
    duplicates = sum(a["duplicates"] for a in arms)
    if duplicates and conventions.duplicates == "error":
        example = source.first_repeat()
        assert example is not None  # there are repeats
        raise AbevalError(
            f"experiment {experiment!r}: request {example.list_id!r} shows item "
            f"{example.item_id!r} twice (positions {example.first_position} and "
            f"{example.last_position}; {duplicates} repeated impressions in all); "
            "count each item once at its first position with the convention "
            "duplicates='dedupe'"
        )
    if duplicates:
        warnings.append(
            f"{duplicates} repeated impressions of an item in the same request counted once, "
            "at their first position"
        )
    tied = sum(a["tied"] for a in arms)
    if tied:
        warnings.append(
            f"{tied} requests show two items at the same position; tied items share their rank"
        )
    return warnings


def _ranking_results(
    source: ReplaySource, specs: list[MetricSpec], extra: Mapping[str, str]
) -> list[OfflineMetricResult]:
    ranking = [s for s in specs if s.kind == "ranking"]
    if not ranking:
        return []
    query = ranking_query(
        ranking, ranked=source.relation("ranked"), lists="r_list_users", list_ranks=True
    )
    rows = source.rows(query.ctes, query.group_query())
    return query.results(rows, extra_convention=extra)


def _beyond_results(
    source: ReplaySource,
    specs: list[MetricSpec],
    arms: list[ArmRow],
    extra: Mapping[str, str],
) -> list[OfflineMetricResult]:
    beyond = [s for s in specs if s.kind == "beyond"]
    if not beyond:
        return []
    # popularity's share is over the analysed users, the arms' users together
    reference_users = sum(int(a["users"]) for a in arms)
    relations = {role: source.relation(name) for role, name in BEYOND_RELATIONS.items()}
    # a list id (request number) is in one arm only: lists are keyed by it alone
    inputs = BeyondInputs(
        **relations,
        similarity="cooccurrence",
        reference_users=reference_users,
        list_key=("list_id",),
    )
    query = beyond_query(beyond, inputs)
    rows = source.rows(query.ctes, query.select)
    groups = {a["arm"]: (a["users_with_requests"], a["requests"]) for a in arms}
    convention = dict(extra)
    convention["catalogue"] = "all items seen for the experiment"
    convention["reference"] = "clicks and purchases of the analysed users (popularity)"
    convention["similarity"] = "co-occurrence cosine of the analysed users' interactions"
    return query.results(rows, groups, extra_convention=convention)


def _arm_replay(counts: ArmRow, conventions: Conventions) -> ArmReplay:
    removed = counts["duplicates"] if conventions.duplicates == "dedupe" else 0
    return ArmReplay(
        arm=counts["arm"],
        users=counts["users"],
        users_with_requests=counts["users_with_requests"],
        requests=counts["requests"],
        impressions=counts["impressions"] - removed,
        duplicates_removed=removed,
        requests_with_tied_positions=counts["tied"],
    )


def _conventions(
    conventions: Conventions, extra: Mapping[str, str], post_exposure_only: bool
) -> dict[str, str]:
    conv = conventions.to_dict()
    conv.update(extra)
    conv["average"] = "per request, then per user, then over the users of the arm"
    conv["population"] = (
        "analysed users; impressions from their first exposure on"
        if post_exposure_only
        else "analysed users; all their impressions"
    )
    return conv


def _gains_text(gains: Mapping[str, float]) -> str:
    parts = [f"{name} {gain:g}" for name, gain in sorted(gains.items(), key=lambda kv: -kv[1])]
    return "strongest event per (request, item): " + ", ".join(parts) + ", else 0"
