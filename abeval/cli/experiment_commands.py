"""``abeval experiment show`` and ``abeval experiment unset``: what is recorded for
one experiment, and forgetting part of it (``experiment set`` records it)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from abeval.cli.app import DbOption, command
from abeval.cli.options import FormatOption, JsonAlias, chosen_format
from abeval.cli.store_commands import experiment_app


@command(experiment_app, "show")
def experiment_show(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="Experiment key.")],
    fmt: FormatOption = "text",
    as_json: JsonAlias = False,
    db: DbOption = None,
) -> None:
    """Print what is recorded for an experiment: control, split, window, configuration,
    what was decided, the target probabilities and the evaluations recorded."""
    fmt = chosen_format(fmt, as_json)
    from abeval import api, render

    with api.open(db, read_only=True) as store:
        record = store.experiment(experiment)
    if fmt == "json":
        typer.echo(json.dumps(render.json_document(record), indent=2))
        return
    typer.echo(render.text(record), nl=False)


@command(experiment_app, "unset")
def experiment_unset(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="Experiment key.")],
    control: Annotated[bool, typer.Option("--control", help="The recorded control arm.")] = False,
    split: Annotated[bool, typer.Option("--split", help="The expected split.")] = False,
    window: Annotated[bool, typer.Option("--window", help="The analysis window.")] = False,
    primary: Annotated[bool, typer.Option("--primary")] = False,
    secondary: Annotated[bool, typer.Option("--secondary")] = False,
    guardrails: Annotated[bool, typer.Option("--guardrails")] = False,
    caps: Annotated[bool, typer.Option("--cap")] = False,
    cuped_days: Annotated[bool, typer.Option("--cuped-days")] = False,
    target_mde: Annotated[bool, typer.Option("--target-mde")] = False,
    alpha: Annotated[bool, typer.Option("--alpha")] = False,
    correction: Annotated[bool, typer.Option("--correction")] = False,
    plan_users: Annotated[bool, typer.Option("--plan-users")] = False,
    plan_days: Annotated[bool, typer.Option("--plan-days")] = False,
    owner: Annotated[bool, typer.Option("--owner")] = False,
    hypothesis: Annotated[bool, typer.Option("--hypothesis")] = False,
    tags: Annotated[bool, typer.Option("--tags", help="Every tag recorded.")] = False,
    status: Annotated[
        bool, typer.Option("--status", help="The status (and the date of the decision).")
    ] = False,
    decided_on: Annotated[bool, typer.Option("--decided-on")] = False,
    db: DbOption = None,
) -> None:
    """Forget recorded settings of an experiment (each flag names one); the defaults apply again."""
    from abeval import api, render

    chosen = {
        "control": control,
        "split": split,
        "window": window,
        "primary": primary,
        "secondary": secondary,
        "guardrails": guardrails,
        "caps": caps,
        "cuped_days": cuped_days,
        "target_mde": target_mde,
        "alpha": alpha,
        "correction": correction,
        "plan_users": plan_users,
        "plan_days": plan_days,
        "owner": owner,
        "hypothesis": hypothesis,
        "tags": tags,
        "status": status,
        "decided_on": decided_on,
    }
    removed = api.unset_options(name for name, on in chosen.items() if on)  # before opening
    with api.open(db, create=False) as store:
        s, config = store.unset(experiment, removed)
    flags = {"control": "--control", "split": "--split", "window": "--window"}
    flags |= render.recordable_options()
    flags |= {n: f"--{n.replace('_', '-')}" for n in chosen if n not in flags}
    typer.echo(f"{experiment}: removed {', '.join(flags[n] for n in removed)}", err=True)
    typer.echo(render.settings_line(experiment, s), err=True)
    for line in render.config_lines(config):
        typer.echo(f"  recorded {line}", err=True)


@command(experiment_app, "record")
def experiment_record(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="An evaluation kept by abeval evaluate --experiment (evaluation-ID.json).",
        ),
    ],
    db: DbOption = None,
) -> None:
    """Record an evaluation that `abeval evaluate --experiment` finished but could not
    record (it kept it in a file and named this command); its id and time unchanged."""
    from abeval import api

    with api.open(db, create=False) as store:
        evaluation = store.record_evaluation(file)
    typer.echo(
        f"recorded evaluation {evaluation.evaluation_id} against experiment "
        f"{evaluation.experiment} ({len(evaluation.metrics)} rows) from {file}",
        err=True,
    )
