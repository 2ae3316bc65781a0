"""``abeval forecast``: a candidate's online lift, forecast from its offline lift
and the past experiments (docs/usage.md#forecast-the-online-lift)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from abeval.cli.app import (
    DbOption,
    app,
    command,
    emit,
    page_out,
)
from abeval.cli.options import (
    JsonAlias,
    KOption,
    ShowStoreOption,
    TextPageFormatOption,
    chosen_format,
)


@command(app, "forecast")
def forecast(
    offline_lift: Annotated[
        float | None,
        typer.Option(
            "--offline-lift",
            help="The candidate's relative offline lift over production (0.031 = +3.1%).",
            show_default=False,
        ),
    ] = None,
    offline_se: Annotated[
        float | None,
        typer.Option(
            "--offline-se",
            help="The standard error of --offline-lift (0 if it has no noise).",
            show_default=False,
        ),
    ] = None,
    truth: Annotated[
        Path | None,
        typer.Option(
            "--truth",
            "-t",
            metavar="FILE",
            help="Held-out truth to evaluate -r's models on.",
            show_default=False,
        ),
    ] = None,
    recommendations: Annotated[
        list[str] | None,
        typer.Option(
            "--recommendations",
            "-r",
            metavar="NAME=FILE",
            help="Production's and the candidate's lists: -r control=production.csv "
            "-r candidate=new.csv (evaluated as abeval evaluate does).",
            show_default=False,
        ),
    ] = None,
    target_propensities: Annotated[
        Path | None,
        typer.Option(
            "--target-propensities",
            metavar="FILE",
            help="Off-policy evidence: the candidate's probabilities (request_id, item_id, "
            "position, probability [, probability_given_above]) for the requests of "
            "--experiment's production logs.",
            show_default=False,
        ),
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            "-e",
            metavar="NAME",
            help="The stored experiment whose control (production) logs --target-propensities "
            "reweights.",
            show_default=False,
        ),
    ] = None,
    k: KOption = "5,10",
    signal: Annotated[
        str | None,
        typer.Option(
            "--signal",
            "-s",
            metavar="NAME",
            help="The offline signal (ndcg@10, an OPE estimator...); default: the one the "
            "agreement board ranks best (a history file's only one).",
            show_default=False,
        ),
    ] = None,
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="Past experiments from a CSV or Parquet file (experiment, signal, "
            "offline_lift, offline_se, online_lift, online_se; optional metric, arm, date, "
            "users) instead of the store's.",
            show_default=False,
        ),
    ] = None,
    primary: Annotated[
        str | None,
        typer.Option(
            metavar="METRICS",
            help="Online metrics to forecast from the store, comma-separated (default: "
            "ctr,conversion and each past experiment's recorded primary metrics).",
        ),
    ] = None,
    mde: Annotated[
        float, typer.Option("--mde", help="The target relative lift: P(lift > MDE).")
    ] = 0.02,
    assurance: Annotated[
        float,
        typer.Option("--assurance", help="The assurance the test's size is planned for."),
    ] = 0.8,
    users_per_day: Annotated[
        float | None,
        typer.Option(
            "--users-per-day",
            help="Traffic of the new test (default: the median of the store's experiments "
            "measuring the metric).",
            show_default=False,
        ),
    ] = None,
    max_days: Annotated[
        float,
        typer.Option(
            "--max-days",
            help="The longest test the go / no-go calls feasible, in days.",
        ),
    ] = 28.0,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="1 − the intervals' level [default: 0.05; each past experiment's online "
            "intervals at its recorded α].",
            show_default=False,
        ),
    ] = None,
    fmt: TextPageFormatOption = "text",
    as_json: JsonAlias = False,
    show_store: ShowStoreOption = False,
    out: Annotated[Path | None, page_out("reports/forecast.html")] = None,
    db: DbOption = None,
) -> None:
    """Forecast a candidate's online lift from its offline lift and the past experiments:
    point, prediction interval, P(lift > 0), and the users a test needs."""
    from abeval import api, render
    from abeval.api import options as check

    # The options' values are checked by the library (api.forecast_options and
    # api.forecast_evidence raise OptionError, printed naming the option).
    options = api.forecast_options(
        signal=signal,
        primary=primary,
        alpha=alpha,
        mde=mde,
        assurance=assurance,
        users_per_day=users_per_day,
        max_days=max_days,
        history=history,
    )
    way = api.forecast_inputs(  # which evidence is given, checked before any store is opened
        offline_lift=offline_lift,
        offline_se=offline_se,
        truth=truth,
        recommendations=recommendations,
        target_propensities=target_propensities,
        experiment=experiment,
        history=history,
    )
    evidence = None
    if way == "typed":
        evidence = api.forecast_evidence(offline_lift=offline_lift, offline_se=offline_se)
    elif way == "evaluated":
        models = check.named_files("recommendations", recommendations or [])
        evidence = api.forecast_evidence(
            truth=truth, recommendations=models, k=k, alpha=options.alpha
        )
    if history is not None:
        assert evidence is not None
        report = api.forecast_history(history, evidence, options)
    else:
        with api.open(db, create=False) as store:  # held read-only; keeps summaries
            report = store.forecast(
                evidence, options, experiment=experiment, target_propensities=target_propensities
            )
    fmt = chosen_format(fmt, as_json)
    if fmt == "json":
        document = render.json_document(report)
        emit(json.dumps(document, indent=2, allow_nan=False) + "\n", out)
    elif fmt == "html":
        emit(render.html(report, show_store=show_store), out, default=render.page_path(report))
    else:
        emit(render.text(report), out)
