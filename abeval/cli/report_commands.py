"""``abeval report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, get_args

import typer

from abeval.choices import DecisionName, RelativeIntervalChoice
from abeval.cli.app import (
    DbOption,
    app,
    command,
    emit,
    page_out,
)
from abeval.cli.options import (
    AlphaOption,
    CapOption,
    CorrectionOption,
    CupedDaysOption,
    FromOption,
    GuardrailsOption,
    JsonAlias,
    KOption,
    PageFormatOption,
    PlanDaysOption,
    PlanUsersOption,
    PrimaryOption,
    SecondaryOption,
    ShowStoreOption,
    TargetMdeOption,
    TargetPropensitiesOption,
    ToOption,
    VerboseOption,
    chosen_format,
    experiment_option,
)

DECISIONS: tuple[str, ...] = get_args(DecisionName)
#: The exit code when a decision named by ``--fail-on`` was reached (docs/metrics.md#decision).
FAIL_ON_EXIT = 3


def _decision_names(value: str | None) -> frozenset[str]:
    """``invalid,roll_back`` → the decisions; a usage error naming an unknown one."""
    if value is None:
        return frozenset()
    from abeval.errors import OptionError

    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in DECISIONS]
    if not names or unknown:
        what = f"unknown decision {unknown[0]!r}" if unknown else "no decision given"
        reason = f"{what}; choose from {', '.join(DECISIONS)}"
        raise OptionError("fail_on", value, reason, allowed=DECISIONS)
    return frozenset(names)


@command(app, "report")
def report(
    experiment: Annotated[str, experiment_option("Experiment key.")],
    fmt: PageFormatOption = "html",
    as_json: JsonAlias = False,
    show_store: ShowStoreOption = False,
    verbose: VerboseOption = False,
    out: Annotated[Path | None, page_out("reports/<experiment>.html")] = None,
    control: Annotated[
        str | None,
        typer.Option(metavar="ARM", help="Control arm (default: recorded, else 'control')."),
    ] = None,
    alpha: AlphaOption = None,
    correction: CorrectionOption = None,
    relative_interval: Annotated[
        RelativeIntervalChoice,
        typer.Option(
            "--relative-interval",
            help="Relative lift's interval: Fieller (consistent with the test) or the delta method "
            "(gbstats).",
        ),
    ] = "fieller",
    sequential: Annotated[
        bool, typer.Option("--sequential", help="Always-valid confidence sequences.")
    ] = False,
    tuning_n: Annotated[
        float, typer.Option("--tuning-n", help="Sequential: users at which the bound is tightest.")
    ] = 5000.0,
    cuped_days: CupedDaysOption = None,
    segment: Annotated[
        str | None,
        typer.Option(metavar="ATTRIBUTE", help="Break down by this event attribute (e.g. device)."),
    ] = None,
    primary: PrimaryOption = None,
    guardrails: GuardrailsOption = None,
    secondary: SecondaryOption = None,
    target_mde: TargetMdeOption = None,
    plan_users: PlanUsersOption = None,
    plan_days: PlanDaysOption = None,
    k: KOption = "5,10",
    offline: Annotated[bool, typer.Option(help="Replay offline metrics from the logs.")] = True,
    window_from: FromOption = None,
    window_to: ToOption = None,
    cap: CapOption = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="DECISIONS",
            help="Exit with code 3, after writing the report, when any arm's decision is one "
            f"of these (comma-separated: {', '.join(DECISIONS)}).",
        ),
    ] = None,
    target_propensities: TargetPropensitiesOption = None,
    ope_cap: Annotated[
        float, typer.Option("--ope-cap", help="Cap λ on the weights of capped IPS and NCIS.")
    ] = 100.0,
    ope: Annotated[
        bool, typer.Option(help="Off-policy estimates when impressions carry a propensity.")
    ] = True,
    prior: Annotated[
        str,
        typer.Option(
            "--prior",
            metavar="flat|history",
            help="The Bayesian view's prior: flat, or each metric's learned from the store's "
            "other experiments (as `abeval program` reads them).",
        ),
    ] = "flat",
    db: DbOption = None,
) -> None:
    """Analyse one experiment: online lifts, health checks, offline metrics, power."""
    from abeval import api, render

    # Every option's value is checked by the library (an OptionError naming it).
    failing = _decision_names(fail_on)
    # The recordable options left out take the saved configuration, else the default.
    options = api.report_options(
        control=control,
        alpha=alpha,
        correction=correction,
        relative_interval=relative_interval,
        sequential=sequential,
        tuning_n=tuning_n,
        cuped_days=cuped_days,
        segment=segment,
        primary=primary,
        guardrails=guardrails,
        secondary=secondary,
        target_mde=target_mde,
        k=k,
        offline=offline,
        window_from=window_from,
        window_to=window_to,
        cap=cap,
        target_propensities=target_propensities,
        ope_cap=ope_cap,
        ope=ope,
        plan_users=plan_users,
        plan_days=plan_days,
        prior=prior,
    )
    with api.open(db, create=False) as store:  # held read-only; keeps summaries
        result = store.report(experiment, options)
    fmt = chosen_format(fmt, as_json)
    if fmt == "json":
        emit(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n", out)
    elif fmt == "text":
        emit(render.text(result, verbose=verbose), out)
    else:
        emit(render.html(result, show_store=show_store), out, default=render.page_path(result))
    hit = [d for d in result.decisions if d.decision in failing]
    if hit:
        said = ", ".join(f"{d.arm} {d.decision}" for d in hit)
        typer.echo(f"--fail-on: {said}; exit code {FAIL_ON_EXIT}", err=True)
        raise typer.Exit(FAIL_ON_EXIT)
