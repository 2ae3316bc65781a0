"""One run of ``abeval evaluate``: :func:`evaluate`.

The steps: choose the metrics and check that their inputs are given; load the
input files into an in-memory DuckDB (:mod:`~abeval.analysis.evaluate.inputs`);
rank the lists and compute the ranking metrics, the paired comparison and the
per-user file (:mod:`~abeval.analysis.evaluate.tables`), the beyond-accuracy
metrics (:mod:`~abeval.analysis.evaluate.beyond`) and the rating metrics
(:mod:`~abeval.analysis.evaluate.ratings`); gather them in one
:class:`~abeval.analysis.evaluate.results.EvaluationResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.analysis.evaluate import tables
from abeval.analysis.evaluate.beyond import beyond_results
from abeval.analysis.evaluate.inputs import Inputs, Named, load_inputs, named
from abeval.analysis.evaluate.ratings import rating_results
from abeval.analysis.evaluate.reader import Source, source
from abeval.analysis.evaluate.results import EvaluationResult, PairedComparison, UserCoverage
from abeval.errors import AbevalError, OptionError
from abeval.metrics import (
    Conventions,
    MetricSpec,
    OfflineMetricResult,
    default_ranking_metrics,
    parse_offline_metrics,
    ranking_query,
)

if TYPE_CHECKING:
    import duckdb

TIE_RULE = "rank ascending, else score descending; ties by item id descending (trec_eval)"
MISSING = ("skip", "zero")


@dataclass(frozen=True)
class _Metrics:
    """The metrics asked for, by kind."""

    ranking: tuple[MetricSpec, ...]
    beyond: tuple[MetricSpec, ...]
    rating: tuple[MetricSpec, ...]

    @classmethod
    def of(cls, specs: Sequence[MetricSpec]) -> _Metrics:
        def kind(name: str) -> tuple[MetricSpec, ...]:
            return tuple(s for s in specs if s.kind == name)

        return cls(kind("ranking"), kind("beyond"), kind("rating"))


def evaluate(
    truth: Any,
    recommendations: Sequence[Any] | Mapping[str, Any] = (),
    *,
    predictions: Sequence[Any] | Mapping[str, Any] = (),
    items: Any = None,
    history: Any = None,
    k: Sequence[int] = (5, 10),
    metrics: str | Sequence[str] | None = None,
    conventions: Conventions | None = None,
    missing: str = "skip",
    min_relevance: float | None = None,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    per_user: str | Path | None = None,
    baseline: str | None = None,
) -> EvaluationResult:
    """Evaluate recommendation (and rating prediction) files against a truth file.

    ``metrics`` is a comma-separated string or a list of names (``ndcg@10``,
    ``ap@5``, ``mrr``, ``coverage@10``, ``rmse``); by default precision, recall,
    AP, NDCG and hit rate at every ``k``, MRR, and RMSE/MAE when predictions are
    given. ``recommendations`` and ``predictions`` are files (each model named
    after its file, :func:`abeval.files.model_names`) or a mapping of model name to
    file. With two or more recommendation files every model is compared with the
    baseline, paired over users: the model named ``baseline``, else the first.
    Each input may be a pandas DataFrame or a pyarrow Table instead of a file
    (:func:`~abeval.analysis.evaluate.reader.source`), read by the same reader with
    the same checks; messages name it by its argument (``recommendations['bm25']``).
    """
    import duckdb

    conventions = conventions or Conventions()
    truth = source("truth", truth)
    recs = _baseline_first(named(model_sources("recommendations", recommendations)), baseline)
    preds = named(model_sources("predictions", predictions))
    items = None if items is None else source("items", items)
    history = None if history is None else source("history", history)
    chosen = _choose(recs, preds, history, k, metrics, conventions, missing)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET preserve_insertion_order = false")
        inputs = load_inputs(con, truth, recs, preds, items, history, conventions, min_relevance)
        coverage: list[UserCoverage] = []
        results: list[OfflineMetricResult] = []
        comparisons: list[PairedComparison] = []
        if recs:
            coverage, results, comparisons = _evaluate_lists(
                con, inputs, chosen, missing, alpha, resamples, seed, per_user
            )
        ratings = rating_results(con, chosen.rating, inputs.predictors) if chosen.rating else []
    finally:
        con.close()
    return EvaluationResult(
        models=inputs.models or inputs.predictors,
        files=inputs.files,
        coverage=tuple(coverage),
        metrics=tuple(results),
        comparisons=tuple(comparisons),
        ratings=tuple(ratings),
        conventions=_conventions(conventions, missing, min_relevance),
        warnings=inputs.warnings,
        per_user_path=str(per_user) if per_user is not None and chosen.ranking else None,
    )


def model_sources(
    argument: str, given: Sequence[Any] | Mapping[str, Any]
) -> Sequence[Source] | Mapping[str, Source]:
    """Each model input as a :class:`~abeval.analysis.evaluate.reader.Source`, a
    frame named ``argument['name']`` (``argument[i]`` in a list): how messages
    name it (``runs['control']`` in :func:`abeval.evaluate`)."""
    if isinstance(given, Mapping):
        return {name: source(f"{argument}[{name!r}]", v) for name, v in given.items()}
    return [source(f"{argument}[{i}]", v) for i, v in enumerate(given)]


def _baseline_first(models: list[Named], baseline: str | None) -> list[Named]:
    """The models with ``baseline`` (when given) moved to the front."""
    if baseline is None:
        return models
    names = [n for n, _ in models]
    if baseline not in names:
        raise AbevalError(
            f"no model named {baseline!r} to compare with; models: {', '.join(names)}"
        )
    return sorted(models, key=lambda m: m[0] != baseline)


def _choose(
    recommendations: Sequence[Named],
    predictions: Sequence[Named],
    history: str | Path | None,
    k: Sequence[int],
    metrics: str | Sequence[str] | None,
    conventions: Conventions,
    missing: str,
) -> _Metrics:
    """The metrics to compute, once the options and the files given allow them."""
    if missing not in MISSING:
        raise OptionError("missing", missing, "use skip or zero", allowed=MISSING)
    if not recommendations and not predictions:
        raise OptionError(
            "recommendations", None, "nothing to evaluate; give recommendations or predictions"
        )
    ks = sorted({int(x) for x in k})
    if any(x < 1 for x in ks):
        raise OptionError("k", list(k), "give cutoffs of at least 1, as in 5,10,20")
    specs = _metric_specs(metrics, ks, conventions, bool(recommendations), bool(predictions))
    chosen = _Metrics.of(specs)
    if (chosen.ranking or chosen.beyond) and not recommendations:
        first = (chosen.ranking or chosen.beyond)[0]
        raise OptionError("recommendations", None, f"{first.label} needs recommendations")
    if chosen.rating and not predictions:
        raise OptionError("predictions", None, f"{chosen.rating[0].label} needs rating predictions")
    if any(s.name == "serendipity" for s in chosen.beyond) and history is None:
        raise OptionError("history", None, "serendipity needs the users' history")
    return chosen


def _metric_specs(
    metrics: str | Sequence[str] | None,
    ks: Sequence[int],
    conventions: Conventions,
    have_recs: bool,
    have_preds: bool,
) -> list[MetricSpec]:
    """The metrics named, else the defaults for the files given."""
    if metrics:
        return parse_offline_metrics(metrics, ks, conventions)
    specs: list[MetricSpec] = []
    if have_recs:
        specs += default_ranking_metrics(ks, conventions)
        specs += parse_offline_metrics([f"coverage@{max(ks)}"], conventions=conventions)
    if have_preds:
        specs += parse_offline_metrics(["rmse", "mae"], conventions=conventions)
    return specs


def _evaluate_lists(
    con: duckdb.DuckDBPyConnection,
    inputs: Inputs,
    chosen: _Metrics,
    missing: str,
    alpha: float,
    resamples: int,
    seed: int,
    per_user: str | Path | None,
) -> tuple[list[UserCoverage], list[OfflineMetricResult], list[PairedComparison]]:
    """Coverage of users, ranking and beyond-accuracy results, and the paired comparison of
    the recommendation files (the ``--per-user`` file written on the way)."""
    models = inputs.models
    extra = {"ties": TIE_RULE, "missing_recommendations": missing}
    tables.build_ranked(con, len(models), chosen.ranking, chosen.beyond)
    coverage = tables.coverage(con, models)
    results: list[OfflineMetricResult] = []
    comparisons: list[PairedComparison] = []
    if chosen.ranking:
        query = ranking_query(chosen.ranking, nonrelevant="nonrelevant")
        tables.build_per_user(con, query, len(models), missing == "zero")
        results = tables.ranking_results(con, query, chosen.ranking, models, extra)
        if len(models) > 1:
            comparisons = tables.compare_models(con, query, models, alpha, resamples, seed)
        if per_user is not None:
            tables.write_per_user(con, query, models, Path(per_user))
    if chosen.beyond:
        results += beyond_results(
            con, chosen.beyond, models, inputs.has("items"), inputs.has("history"), extra
        )
    return coverage, results, comparisons


def _conventions(
    conventions: Conventions, missing: str, min_relevance: float | None
) -> dict[str, str]:
    """The conventions of the whole run, as reported."""
    conv = conventions.to_dict()
    conv.update(
        {
            "ties": TIE_RULE,
            "missing_recommendations": missing,
            "relevant": "grade > 0" if min_relevance is None else f"grade >= {min_relevance:g}",
            "average": "per list, then per user, then over users",
        }
    )
    return conv
