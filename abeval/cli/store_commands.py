"""Commands that fill and describe the store: ``ingest``, ``migrate``, ``experiments``,
``experiment set``."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, get_args

import typer

from abeval.choices import EpochUnit, ExperimentStatus, FileFormat, OnError, OutputFormat
from abeval.cli.app import DbOption, app, command
from abeval.cli.options import (
    AlphaOption,
    CapOption,
    CorrectionOption,
    CupedDaysOption,
    FormatOption,
    FromOption,
    GuardrailsOption,
    JsonAlias,
    PlanDaysOption,
    PlanUsersOption,
    PrimaryOption,
    SecondaryOption,
    TargetMdeOption,
    TargetPropensitiesOption,
    ToOption,
    chosen_format,
)
from abeval.errors import OptionError
from abeval.formatting import printable

if TYPE_CHECKING:
    from abeval.api import ExperimentConfig, IngestSummary

experiment_app = typer.Typer(
    help="Record, show and remove the settings of one experiment.", no_args_is_help=True
)
app.add_typer(experiment_app, name="experiment")


def _progress(enabled: bool) -> object:
    if not enabled or not sys.stderr.isatty():
        return None

    def say(message: str) -> None:
        typer.echo(f"  {message}...", err=True)

    return say


@command(app, "ingest")
def ingest(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help=(
                "Event files: .csv, .parquet, .jsonl, each also compressed (.gz, .zst, "
                ".bz2, .xz); - reads standard input."
            ),
        ),
    ],
    db: DbOption = None,
    input_format: Annotated[
        FileFormat | None,
        typer.Option(
            "--input-format",
            help="The files' format (default: by extension; needed for -).",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="<text|json>",
            help="What to write: text (default; on stderr) or json (on stdout).",
            show_default=False,
        ),
    ] = "text",
    epoch: Annotated[
        EpochUnit | None,
        typer.Option(
            "--epoch",
            help="The unit of numeric timestamps: s, ms or us "
            "(default: told by magnitude, docs/usage.md#epoch-timestamps).",
        ),
    ] = None,
    on_error: Annotated[
        OnError,
        typer.Option(
            "--on-error",
            help="abort: a file with a bad row loads nothing (default). "
            "skip: load the good rows, keep the bad ones in rejected_rows.",
        ),
    ] = "abort",
    as_json: JsonAlias = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Load event files into the store. Each file is all or nothing; re-loading adds nothing."""
    from abeval import api
    from abeval.errors import AbevalError, Interrupted

    # --format was the input's format before --input-format (the API's ``fmt``)
    former = fmt if fmt in get_args(FileFormat) else None
    input_format = cast(
        FileFormat | None,
        api.ingest_options(
            files, input_format=input_format, fmt=former, on_error=on_error, epoch=epoch
        ),
    )
    fmt = "text" if former is not None else fmt
    fmt = chosen_format(fmt, as_json)
    if fmt not in get_args(OutputFormat):
        raise OptionError(
            "fmt",
            fmt,
            "choose one of text, json (the files' format is --input-format)",
            allowed=get_args(OutputFormat),
        )
    as_json = fmt == "json"

    summaries: list[IngestSummary] = []
    try:
        with api.open(db) as store:
            for i, path in enumerate(files):
                try:
                    summary = store.ingest(
                        path,
                        input_format=input_format,
                        epoch=epoch,
                        on_error=on_error,
                        progress=_progress(not quiet and not as_json),  # type: ignore[arg-type]
                    )
                except AbevalError as exc:
                    exc.details.extend(_not_loaded(files, summaries, i))
                    raise
                summaries.append(summary)
                if not as_json and not quiet:
                    _say(summary)
                for warning in summary.warnings:
                    typer.echo(f"Warning: {printable(warning)}", err=True)
    except KeyboardInterrupt as exc:
        # Each file is one transaction: the one being read was rolled back.
        done = len(summaries)
        what = f"nothing from {files[done]} was loaded" if done < len(files) else "all was loaded"
        raise Interrupted(
            what,
            signum=getattr(exc, "signum", signal.SIGINT),
            details=_not_loaded(files, summaries, done) if done < len(files) else [],
        ) from None
    if as_json:
        typer.echo(json.dumps({"files": [s.to_dict() for s in summaries]}, indent=2))


def _say(summary: IngestSummary) -> None:
    """The file's summary on stderr: every row read is counted once."""
    from abeval import render

    for line in render.ingest_lines(summary):
        typer.echo(line, err=True)


def _not_loaded(files: list[Path], summaries: list[IngestSummary], failed: int) -> list[str]:
    """Detail lines after a file failed: which files are in the store, which were not read.
    Each file is its own transaction, and re-loading a loaded file adds nothing."""
    if len(files) == 1:
        return []
    lines = []
    if summaries:
        lines.append("loaded before the error: " + ", ".join(s.file for s in summaries))
    rest = [str(f) for f in files[failed + 1 :]]
    if rest:
        lines.append("not read: " + ", ".join(rest))
    lines.append("after fixing it, run the same command again: files already loaded add nothing")
    return lines


@command(app, "rejects")
def rejects(
    ingest_id: Annotated[int | None, typer.Option("--ingest", help="Only this ingest.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many rows.")] = 50,
    db: DbOption = None,
    fmt: FormatOption = "text",
    as_json: JsonAlias = False,
) -> None:
    """List rows rejected by `abeval ingest --on-error skip`."""
    as_json = chosen_format(fmt, as_json) == "json"
    from abeval import api

    api.rejects_options(ingest_id, limit)  # before the store is opened

    with api.open(db, read_only=True) as store:
        rows = store.rejects(ingest=ingest_id, limit=limit)
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=2))
        return
    if not rows:
        typer.echo(
            "no rejected rows" + (f" in ingest {ingest_id}" if ingest_id is not None else ""),
            err=True,
        )
        return
    for r in rows:
        line = f"row {r.line}" if r.format == "parquet" else str(r.line)
        column = f":{r.column}" if r.column else ""
        typer.echo(f"{r.file}:{line}{column}: {r.reason}")
        if r.raw:
            typer.echo("    " + str(r.raw).replace("\n", "\n    "))


@command(app, "migrate")
def migrate(db: DbOption = None) -> None:
    """Create the store or upgrade its schema to this version of abeval."""
    from abeval import api

    with api.open(db, migrate=False) as store:
        done = store.migrate()
    if done:
        for step in done:
            typer.echo(f"applied {step.version:04d}_{step.name}", err=True)
    else:
        typer.echo(f"{store.display} is up to date", err=True)


@command(app, "experiments")
def experiments(
    db: DbOption = None, fmt: FormatOption = "text", as_json: JsonAlias = False
) -> None:
    """List the experiments in the store: arms, users, events by type, time range."""
    as_json = chosen_format(fmt, as_json) == "json"
    from abeval import api, render

    with api.open(db, read_only=True) as store:
        found = store.experiments()
    for problem in found.problems:
        typer.echo(printable(f"warning: {problem}"), err=True)
    if as_json:
        typer.echo(json.dumps([e.to_dict() for e in found], indent=2))
        return
    if not found:
        typer.echo("no experiments; load events with `abeval ingest FILE`")
        return
    for line in render.experiments_lines(found):
        typer.echo(line)


@command(experiment_app, "set")
def experiment_set(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="Experiment key.")],
    control: Annotated[str | None, typer.Option(metavar="ARM", help="The control arm.")] = None,
    split: Annotated[
        str | None,
        typer.Option(metavar="ARM=SHARE,...", help="Expected split, e.g. control=50,treatment=50."),
    ] = None,
    window_from: FromOption = None,
    window_to: ToOption = None,
    target_propensities: TargetPropensitiesOption = None,
    primary: PrimaryOption = None,
    secondary: SecondaryOption = None,
    guardrails: GuardrailsOption = None,
    cap: CapOption = None,
    cuped_days: CupedDaysOption = None,
    target_mde: TargetMdeOption = None,
    alpha: AlphaOption = None,
    correction: CorrectionOption = None,
    plan_users: PlanUsersOption = None,
    plan_days: PlanDaysOption = None,
    owner: Annotated[
        str | None, typer.Option(metavar="NAME", help="Who owns the experiment.")
    ] = None,
    hypothesis: Annotated[
        str | None, typer.Option(metavar="TEXT", help="What the change is expected to do.")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            metavar="TAG",
            help="A tag, added to those recorded (repeat for several; "
            "`experiment unset --tags` forgets them).",
        ),
    ] = None,
    status: Annotated[
        ExperimentStatus | None,
        typer.Option(help="What became of it (running until decided).", show_default=False),
    ] = None,
    decided_on: Annotated[
        str | None,
        typer.Option(
            "--decided-on",
            metavar="DATE",
            help="The date of the decision (YYYY-MM-DD); needs a status other than running.",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Record an experiment's control arm, expected traffic split, analysis window,
    target probabilities, configuration (metrics, guardrail margins, caps, CUPED,
    target MDE, alpha, correction, planned horizon) and what was decided (owner,
    hypothesis, tags, status, date); `report` and `power` use the settings unless
    a flag says otherwise, `program` what was decided."""
    from abeval import api, render

    config = config_flags(locals())
    given = (control, split, window_from, window_to, target_propensities)
    decided: dict[str, Any] = {
        "owner": owner,
        "hypothesis": hypothesis,
        "tag": tag,
        "status": status,
        "decided_on": decided_on,
    }
    checked = api.checked_settings(  # before the store is opened, and only here
        config,
        control=control,
        split=split,
        window_from=window_from,
        window_to=window_to,
        target_propensities=target_propensities,
        **decided,
    )
    with api.open(db, create=False) as store:
        s, _, recorded = store.set(experiment, checked)
        shown = store.experiment(experiment) if any(decided.values()) else None
    if shown is not None:
        typer.echo(render.outcome_line(shown), err=True)
    if any(x is not None for x in given[:4]) or config.recorded():
        typer.echo(render.settings_line(experiment, s), err=True)
    for line in render.config_lines(config):
        typer.echo(f"  recorded {line}", err=True)
    if recorded is not None:
        typer.echo(printable(render.targets_line(experiment, recorded)), err=True)


def config_flags(values: dict[str, Any]) -> ExperimentConfig:
    """The recordable options a command was given (its ``locals()``: the parameters
    of :data:`CONFIG_PARAMETERS`), parsed and checked."""
    from abeval import api

    return api.experiment_config(**{name: values[name] for name in CONFIG_PARAMETERS})


#: The parameter names of the recordable options shared by `experiment set` and `report`.
CONFIG_PARAMETERS = (
    "primary",
    "secondary",
    "guardrails",
    "cap",
    "cuped_days",
    "target_mde",
    "alpha",
    "correction",
    "plan_users",
    "plan_days",
)
