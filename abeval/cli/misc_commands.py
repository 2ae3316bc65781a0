"""``abeval power`` (planning) and ``abeval demo`` (the whole job on simulated data)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Annotated

import typer

from abeval.cli.app import (
    DbOption,
    app,
    command,
)
from abeval.cli.options import FormatOption, JsonAlias, chosen_format, experiment_option


@command(app, "power")
def power(
    baseline: Annotated[
        float | None,
        typer.Option(help="Control value: a rate (e.g. 0.05) or a mean per user."),
    ] = None,
    sd: Annotated[
        float | None,
        typer.Option(help="Standard deviation per user, for a mean (omit for a proportion)."),
    ] = None,
    mde: Annotated[
        float | None, typer.Option(help="Relative lift to detect, e.g. 0.02 for +2%.")
    ] = None,
    users: Annotated[
        int | None, typer.Option(help="Users per arm you will have: gives the MDE instead.")
    ] = None,
    users_per_day: Annotated[
        float | None, typer.Option("--users-per-day", help="Traffic, all arms: gives days.")
    ] = None,
    arms: Annotated[int, typer.Option(help="Number of arms, control included.")] = 2,
    alpha: Annotated[
        float | None,
        typer.Option(help="Two-sided significance level (default 0.05, or the recorded one)."),
    ] = None,
    power_: Annotated[float, typer.Option("--power", help="Chance to detect the MDE.")] = 0.8,
    sequential: Annotated[
        bool, typer.Option("--sequential", help="Plan for always-valid sequential testing.")
    ] = False,
    tuning_n: Annotated[float, typer.Option("--tuning-n", help="Sequential tuning users.")] = 5000,
    experiment: Annotated[
        str | None,
        experiment_option(
            "Plan from this experiment's own baseline and variances (instead of --baseline)."
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(metavar="METRICS", help="With --experiment: metrics (default the primary)."),
    ] = None,
    cuped_days: Annotated[
        int | None,
        typer.Option(
            "--cuped-days", help="With --experiment: CUPED pre-period in days (default 14)."
        ),
    ] = None,
    delta: Annotated[
        float | None,
        typer.Option(
            help="With --experiment on an interleaved experiment: the preference Δ_AB to "
            "detect (default the observed one)."
        ),
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = "text",
    as_json: JsonAlias = False,
) -> None:
    """Users needed for a target lift (--mde), or the lift detectable with --users;
    with --experiment, both from that experiment's data (for an interleaved
    experiment, the users needed to detect a preference beside an A/B test's)."""
    from abeval import api
    from abeval.api import options as check

    # The values, and which options go together, are checked by the library
    # (api.power_inputs, Store.plan, plan_power).
    as_json = chosen_format(fmt, as_json) == "json"
    if users_per_day is not None:
        check.positive("users_per_day", users_per_day)
    way = api.power_inputs(
        experiment=experiment,
        baseline=baseline,
        sd=sd,
        users=users,
        metric=metric,
        cuped_days=cuped_days,
    )
    if way == "data":
        assert experiment is not None
        _power_from_data(
            experiment,
            metric,
            mde,
            alpha,
            power_,
            sequential,
            tuning_n,
            cuped_days,
            db,
            as_json,
            delta,
        )
        return
    assert baseline is not None
    _power_by_hand(
        baseline,
        sd,
        mde,
        users,
        users_per_day,
        arms,
        0.05 if alpha is None else alpha,
        power_,
        sequential,
        tuning_n,
        as_json,
    )


def _power_from_data(
    experiment: str,
    metric: str | None,
    mde: float | None,
    alpha: float | None,
    power_: float,
    sequential: bool,
    tuning_n: float,
    cuped_days: int | None,
    db: str | None,
    as_json: bool,
    delta: float | None = None,
) -> None:
    from abeval import api, render

    if metric is not None:  # checked before the store is opened
        api.metric_names(metric, "metric", default=False)
    with api.open(db, read_only=True) as store:
        plan = store.plan(
            experiment,
            metric=metric,
            mde=mde,
            alpha=alpha,
            power=power_,
            sequential=sequential,
            tuning_n=tuning_n,
            cuped_days=cuped_days,
            delta=delta,
        )
    if as_json:
        rows = [plan.interleaving] if plan.interleaving else plan.power
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=2, allow_nan=False))
        return
    for line in render.plan_lines(experiment, plan):
        typer.echo(line)


def _power_by_hand(
    baseline: float,
    sd: float | None,
    mde: float | None,
    users: int | None,
    users_per_day: float | None,
    arms: int,
    alpha: float,
    power_: float,
    sequential: bool,
    tuning_n: float,
    as_json: bool,
) -> None:
    from abeval import api, render

    kind = "proportion" if sd is None else "mean"
    result = api.plan_power(
        baseline,
        sd=sd,
        mde=mde,
        users=users,
        arms=arms,
        alpha=alpha,
        power=power_,
        sequential=sequential,
        tuning_n=tuning_n,
    )
    days = None
    if users_per_day and result.total_users:
        days = result.total_users / users_per_day
    if as_json:
        out = result.to_dict() | {"metric_kind": kind, "days": days}
        typer.echo(json.dumps(out, indent=2))
        return
    if result.status != "ok":
        typer.echo(f"{result.status}: {result.message}")
        raise typer.Exit(1)
    for line in render.power_lines(result, kind=kind, users_per_day=users_per_day):
        typer.echo(line)


@command(app, "demo")
def demo(
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Where the demo files go.")] = Path(
        "demo"
    ),
    users: Annotated[int, typer.Option(help="Simulated users.")] = 30_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
) -> None:
    """Simulate an experiment, ingest it into a fresh store and write its report;
    then simulate a history of experiments and ingest it too."""
    from abeval import render
    from abeval.walkthrough import demo as walk_through

    for step in walk_through(out_dir, users=users, seed=seed):
        if isinstance(step, str):
            typer.echo(step, err=True)
        else:  # the experiment's report
            width = shutil.get_terminal_size((100, 20)).columns
            typer.echo(render.text(step) if width >= 80 else "")
