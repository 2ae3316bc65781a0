"""``abeval agreement``: which offline signal predicted the online lift, over the
store's experiments (docs/metrics.md#agreement-across-experiments)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from abeval.cli.app import DbOption, PageFormatOption, app, command, emit, page_out
from abeval.cli.options import JsonAlias, ShowStoreOption, chosen_format


def _comma_names(value: str, known: Callable[[], set[str]]) -> tuple[str, ...]:
    """The hidden ``--experiments a,b``: one name when the whole text is an
    experiment of the store (``known``), else the names between its commas; a
    usage error when none is given."""
    if "," in value and value in known():
        return (value,)
    from abeval.api import options as check

    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    check.given("experiments", bool(names), "no experiment given; name them as a,b")
    return names


@command(app, "agreement")
def agreement(
    experiment: Annotated[
        list[str] | None,
        typer.Option(
            "--experiment",
            "-e",
            metavar="NAME",
            help="An experiment to compare; repeatable (default: every experiment).",
            show_default=False,
        ),
    ] = None,
    experiments: Annotated[
        str | None,
        typer.Option("--experiments", hidden=True, help="Former -e: names a,b."),
    ] = None,
    fmt: PageFormatOption = "html",
    as_json: JsonAlias = False,
    show_store: ShowStoreOption = False,
    out: Annotated[Path | None, page_out("reports/agreement.html")] = None,
    primary: Annotated[
        str | None,
        typer.Option(
            metavar="METRICS",
            help="Online metrics to predict, comma-separated (default: each experiment's "
            "recorded primary metrics, else ctr,conversion).",
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            help="Two-sided level of every interval [default: 0.05; each experiment's "
            "online and replayed intervals at its recorded α].",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap over experiments.")] = 0,
    resamples: Annotated[
        int, typer.Option(help="Bootstrap resamples of the correlations' intervals.")
    ] = 2000,
    target_propensities: Annotated[
        list[str] | None,
        typer.Option(
            "--target-propensities",
            metavar="EXPERIMENT=FILE",
            help="The target's probabilities for one experiment's off-policy estimates "
            "(request_id, item_id, position, probability), as report takes them. Repeatable; "
            "other experiments use the target arm's empirical frequencies.",
            show_default=False,
        ),
    ] = None,
    backtest: Annotated[
        bool,
        typer.Option(
            "--backtest",
            help="Also forecast each experiment from the earlier ones (by start date, or the "
            "history's date) and report coverage, sign accuracy, error and what gating on "
            "P(lift > 0) > 0.5 would have kept and missed.",
        ),
    ] = False,
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="Read past experiments from a CSV or Parquet file (experiment, signal, "
            "offline_lift, offline_se, online_lift, online_se; optional metric, arm, date), "
            "as abeval forecast --history, instead of the store.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Rank offline signals (recorded evaluations, off-policy estimates, replayed
    metrics) by how well they predicted the online lift across experiments."""
    from abeval import api, render
    from abeval.api import options as check

    # The values, and which options go together, are checked by the library (an
    # OptionError naming the option).
    api.agreement_inputs(
        history=history,
        experiment=experiment,
        experiments=experiments,
        target_propensities=target_propensities,
        db=db,
    )
    api.agreement_numbers(alpha, seed, resamples)  # before the store is opened
    if history is None:
        api.metric_names(primary, "primary")
        with api.open(db, create=False) as store:  # held read-only; keeps summaries
            names = list(experiment or [])
            if experiments is not None:
                names += _comma_names(
                    experiments, lambda: {e.experiment for e in store.experiments()}
                )
            board = store.agreement(
                names if experiment is not None or experiments is not None else None,
                alpha=alpha,
                seed=seed,
                resamples=resamples,
                primary=primary,
                target_propensities=check.named_files(
                    "target_propensities",
                    target_propensities or [],
                    what="experiment",
                    form="EXPERIMENT=FILE",
                    named=True,
                ),
                backtest=backtest,
            )
    else:  # a history's metrics are its own names; by default all of them
        board = api.agreement_history(
            history, alpha=alpha, seed=seed, resamples=resamples, primary=primary,
            backtest=backtest,
        )  # fmt: skip
    if chosen_format(fmt, as_json) == "json":
        emit(json.dumps(board.to_dict(), indent=2, allow_nan=False) + "\n", out)
    elif fmt == "text":
        emit(render.text(board), out)
    else:
        emit(render.html(board, show_store=show_store), out, default=render.page_path(board))
