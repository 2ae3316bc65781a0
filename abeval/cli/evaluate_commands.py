"""``abeval evaluate``: offline ranking (and rating) metrics from files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from abeval.choices import ApDenominator, Duplicates, Empty, Gain, Missing
from abeval.cli.app import DbOption, app, command, emit, page_out
from abeval.cli.options import (
    JsonAlias,
    KOption,
    TextPageFormatOption,
    chosen_format,
    experiment_option,
)
from abeval.errors import AbevalError


@command(app, "evaluate")
def evaluate_command(
    truth: Annotated[
        str,
        typer.Option(
            "--truth",
            "-t",
            metavar="FILE",
            help="Held-out truth: user_id, item_id and optionally relevance or rating "
            "(CSV, CSV.gz, Parquet or JSONL).",
            show_default=False,
        ),
    ],
    recommendations: Annotated[
        list[str] | None,
        typer.Option(
            "--recommendations",
            "-r",
            metavar="[NAME=]FILE",
            help="Recommendations: user_id, item_id and rank or score. Repeat to compare "
            "models; the first is the baseline (with --experiment, the control arm's model). "
            "NAME= names the model (default: the file name's stem); a FILE that exists is "
            "never split at '='.",
            show_default=False,
        ),
    ] = None,
    predictions: Annotated[
        list[str] | None,
        typer.Option(
            "--predictions",
            metavar="[NAME=]FILE",
            help="Rating predictions: user_id, item_id, prediction (for rmse and mae). "
            "Repeatable; NAME= as for -r.",
            show_default=False,
        ),
    ] = None,
    items: Annotated[
        str | None,
        typer.Option(
            "--items",
            metavar="FILE",
            help="Catalogue: item_id and optionally category or features (a list of numbers), "
            "for coverage, Gini and diversity.",
            show_default=False,
        ),
    ] = None,
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="Users' past interactions (user_id, item_id): the reference for novelty and "
            "co-occurrence similarity, and needed for serendipity.",
            show_default=False,
        ),
    ] = None,
    k: KOption = "5,10",
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            "-m",
            metavar="METRICS",
            help="Comma-separated metrics, e.g. ndcg@10,ap@10,mrr,coverage@10. A name without "
            "@K takes every --k where the metric needs a cutoff; ndcg, ap and mrr without @K use "
            "the whole list. Default: precision, recall, ap, ndcg, hit_rate at every K, mrr, "
            "coverage (and rmse, mae with --predictions).",
            show_default=False,
        ),
    ] = None,
    fmt: TextPageFormatOption = "text",
    as_json: JsonAlias = False,
    out: Annotated[Path | None, page_out("reports/evaluation.html")] = None,
    per_user: Annotated[
        str | None,
        typer.Option(
            "--per-user",
            metavar="FILE",
            help="Write each user's value of every ranking metric to this file (.csv or .parquet).",
            show_default=False,
        ),
    ] = None,
    ap_denominator: Annotated[
        ApDenominator,
        typer.Option(
            "--ap-denominator",
            help="AP denominator: R (trec_eval map_cut), min_rk = min(R, K) (Spark, RecBole), "
            "or hits (torchmetrics).",
        ),
    ] = "R",
    gain: Annotated[
        Gain,
        typer.Option("--gain", help="NDCG gain: linear (trec_eval), exp2 (2^r - 1), binary."),
    ] = "linear",
    empty: Annotated[
        Empty,
        typer.Option(
            "--empty",
            help="Users with no relevant item: skip (left out of recall, AP, NDCG, MRR, AUC "
            "and counted) or zero.",
        ),
    ] = "skip",
    duplicates: Annotated[
        Duplicates,
        typer.Option(
            "--duplicates",
            help="An item twice in one list: error, or dedupe (count it once at its best "
            "position, with a warning).",
        ),
    ] = "error",
    missing: Annotated[
        Missing,
        typer.Option(
            "--missing",
            help="Truth users without recommendations: skip (counted) or zero (score 0, as "
            "trec_eval -c).",
        ),
    ] = "skip",
    min_relevance: Annotated[
        float | None,
        typer.Option(
            "--min-relevance",
            help="Relevant when the truth grade is at least this (default: grade > 0).",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Level of the comparison tests.")] = 0.05,
    resamples: Annotated[
        int, typer.Option("--resamples", help="Sign-flip resamples of the randomisation test.")
    ] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the randomisation test.")] = 0,
    experiment: Annotated[
        str | None,
        experiment_option(
            "Record the evaluation in the store against this experiment: every model "
            "named after one of its arms (-r ARM=FILE), one of them its control; the report "
            "then shows the lift each model predicted."
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Evaluate recommendation files against held-out truth (ranking metrics, beyond-accuracy
    metrics, RMSE/MAE) and compare models, paired over users."""
    from abeval import api
    from abeval.api import options as check

    # The values are checked by the library (api.evaluate raises OptionError).
    recs = check.named_files("recommendations", recommendations or [])
    preds = check.named_files("predictions", predictions or [])
    options: dict[str, Any] = {
        "items": items,
        "history": history,
        "k": k,
        "metrics": metrics,
        "ap_denominator": ap_denominator,
        "gain": gain,
        "empty": empty,
        "duplicates": duplicates,
        "missing": missing,
        "min_relevance": min_relevance,
        "alpha": alpha,
        "resamples": resamples,
        "seed": seed,
        "per_user": per_user,
    }
    try:
        result = api.evaluate(
            truth,
            recs,
            predictions=preds,
            experiment=experiment,
            db=db,
            on_lock_wait=None if experiment is None else lambda m: typer.echo(m, err=True),
            **options,
        )
    except AbevalError as exc:
        finished = getattr(exc, "result", None)  # evaluated, but not recorded
        if finished is not None:
            _write(finished, fmt, as_json, out, alpha, resamples, seed)
        raise
    for warning in result.warnings:
        typer.echo(f"Warning: {warning}", err=True)
    if result.recorded is not None:
        r = result.recorded
        typer.echo(
            f"recorded evaluation {r.evaluation_id} against experiment {r.experiment} "
            f"({r.rows} rows; baseline: the control arm {r.control})",
            err=True,
        )
    _write(result, fmt, as_json, out, alpha, resamples, seed)


def _write(
    result: Any,
    fmt: Any,
    as_json: bool,
    out: Path | None,
    alpha: float,
    resamples: int,
    seed: int,
) -> None:
    """The evaluation's page, JSON or text, where ``--out`` says."""
    from abeval import render

    fmt = chosen_format(fmt, as_json)
    if fmt == "html":
        page = render.html(result, alpha=alpha, resamples=resamples, seed=seed)
        emit(page, out, default=render.page_path(result))
    elif fmt == "json":
        emit(json.dumps(result.to_dict(), indent=2, allow_nan=False), out)
    else:
        emit(render.text(result), out)
