"""``abeval report``."""

from __future__ import annotations

import json
from datetime import datetime
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
    require,
    require_positive,
    require_share,
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
    TargetMdeOption,
    TargetPropensitiesOption,
    ToOption,
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
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in DECISIONS]
    what = f"unknown decision {unknown[0]!r}" if unknown else "no decision given"
    require(bool(names) and not unknown, "--fail-on", f"{what}; choose from {', '.join(DECISIONS)}")
    return frozenset(names)


def window_bound(value: str | None, option: str, *, end: bool) -> datetime | None:
    """``--from``/``--to`` as a naive UTC datetime; a usage error naming the option."""
    if value is None:
        return None
    from abeval import api

    try:
        return api.parse_bound(value, end=end)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


@command(app, "report")
def report(
    experiment: Annotated[str, experiment_option("Experiment key.")],
    fmt: PageFormatOption = "html",
    as_json: JsonAlias = False,
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
    db: DbOption = None,
) -> None:
    """Analyse one experiment: online lifts, health checks, offline metrics, power."""
    from abeval import api, render

    # Checked here too so that a usage error keeps Typer's usage lines.
    if alpha is not None:
        require_share(alpha, "--alpha")
    require(cuped_days is None or cuped_days >= 0, "--cuped-days", "must be 0 or more")
    require_positive(tuning_n, "--tuning-n")
    require_positive(target_mde, "--target-mde")
    failing = _decision_names(fail_on)
    start = window_bound(window_from, "--from", end=False)
    end = window_bound(window_to, "--to", end=True)
    require(start is None or end is None or start < end, "--to", "must come after --from")
    require_positive(ope_cap, "--ope-cap")
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
        window_from=start,
        window_to=end,
        cap=cap,
        target_propensities=target_propensities,
        ope_cap=ope_cap,
        ope=ope,
        plan_users=plan_users,
        plan_days=plan_days,
    )
    with api.open(db, read_only=True) as store:
        result = store.report(experiment, options)
    fmt = chosen_format(fmt, as_json)
    if fmt == "json":
        emit(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n", out)
    elif fmt == "text":
        emit(render.text(result), out)
    else:
        emit(render.html(result), out, default=render.page_path(result))
    hit = [d for d in result.decisions if d.decision in failing]
    if hit:
        said = ", ".join(f"{d.arm} {d.decision}" for d in hit)
        typer.echo(f"--fail-on: {said}; exit code {FAIL_ON_EXIT}", err=True)
        raise typer.Exit(FAIL_ON_EXIT)
