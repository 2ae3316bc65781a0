"""``abeval power`` (planning) and ``abeval demo`` (the whole job on simulated data)."""

from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from abeval.cli.app import (
    DbOption,
    app,
    command,
    require,
    require_positive,
    require_share,
)
from abeval.cli.options import FormatOption, JsonAlias, chosen_format, experiment_option
from abeval.formatting import count, pct
from abeval.formatting import number as fmt_number

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard
    from abeval.simulate.series import ExperimentFiles


def _check_mde(mde: float | None) -> None:
    if mde is None:
        return
    require(
        -1 < mde < 1 and mde != 0,
        "--mde",
        f"did you mean {mde / 100:g} ({mde:g}%)? give the lift as a share (0.02 for +2%)"
        if mde >= 1
        else f"give a relative lift other than 0 and above -1 (0.02 for +2%), got {mde:g}",
    )


def _days_text(days: float, users_per_day: float, more: str = "") -> str:
    """How long at this traffic; beyond a year, not feasible."""
    from abeval.analysis.planning import FEASIBLE_DAYS

    at = f"{more}days at {users_per_day:,.0f} users per day"
    if days > FEASIBLE_DAYS:
        return f"not feasible at this traffic ({days:,.0f} {at})"
    return f"about {days:.1f} {at}"


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
    db: DbOption = None,
    fmt: FormatOption = "text",
    as_json: JsonAlias = False,
) -> None:
    """Users needed for a target lift (--mde), or the lift detectable with --users;
    with --experiment, both from that experiment's data."""
    as_json = chosen_format(fmt, as_json) == "json"
    if alpha is not None:
        require_share(alpha, "--alpha")
    require_share(power_, "--power")
    require_positive(users_per_day, "--users-per-day")
    require_positive(tuning_n, "--tuning-n")
    _check_mde(mde)
    if experiment is not None:
        for given, option in ((baseline, "--baseline"), (sd, "--sd"), (users, "--users")):
            require(given is None, option, "plans from the data with --experiment: leave it out")
        require(cuped_days is None or cuped_days >= 0, "--cuped-days", "must be 0 or more")
        _power_from_data(
            experiment, metric, mde, alpha, power_, sequential, tuning_n, cuped_days, db, as_json
        )
        return
    require(metric is None, "--metric", "needs --experiment")
    require(cuped_days is None, "--cuped-days", "needs --experiment")
    require(baseline is not None, "--baseline", "give the control value, or --experiment")
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
) -> None:
    from abeval import api
    from abeval.analysis.online_metrics import METRICS, parse_metrics
    from abeval.report.decision_text import guardrail_power_line

    if metric is not None:  # checked before the store is opened
        parse_metrics(metric, (), "metric")
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
        )
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in plan.power], indent=2, allow_nan=False))
        return
    o = plan.options
    design = "sequential" if sequential else "fixed-horizon"
    level = f"alpha {plan.planning_alpha:g}"
    if plan.planning_rule != "single_test":
        from abeval.report.text import CORRECTION_NAMES

        name = CORRECTION_NAMES.get(o.correction, o.correction)
        family = len(plan.power)
        level += f" ({o.alpha:g} over {family} primary comparisons, {name}'s smallest step)"
    typer.echo(f"{experiment}: a {design} test at {level} and {power_:.0%} power")
    for r in plan.power:
        now, need = r.detectable, r.needed_for_target
        label = METRICS[r.metric].label
        typer.echo(f"{label} ({r.arm}): baseline {fmt_number(now.baseline_mean)}")
        typer.echo(f"  detects {pct(now.mde_relative)} now with {count(now.total_users)} users")
        if need.status != "ok":
            typer.echo(f"  {need.status}: {need.message}")
            continue
        typer.echo(
            f"  a {pct(need.mde_relative)} lift needs {count(need.total_users)} users in all"
        )
        if r.more_days_needed is not None and r.users_per_day:
            typer.echo(f"  {_days_text(r.more_days_needed, r.users_per_day, 'more ')}")
    for g in plan.guardrails:
        typer.echo(guardrail_power_line(g))


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
    from abeval.stats import minimum_detectable_effect, required_users

    if (mde is None) == (users is None):
        raise typer.BadParameter("give exactly one of --mde or --users")
    require(arms >= 2, "--arms", f"a test needs a control and at least one treatment, got {arms}")
    require(math.isfinite(baseline), "--baseline", f"must be a number, got {baseline:g}")
    require_positive(sd, "--sd")
    if users is not None:
        require(users >= 2, "--users", f"give at least 2 users per arm, got {users}")
    if sd is None:
        if not 0 < baseline < 1:
            raise typer.BadParameter(
                "a proportion must be between 0 and 1; for a mean also give --sd",
                param_hint="--baseline",
            )
        variance = baseline * (1 - baseline)
        kind = "proportion"
    else:
        variance = sd * sd
        kind = "mean"
    if mde is not None:
        result = required_users(
            baseline,
            variance,
            mde,
            alpha=alpha,
            power=power_,
            n_arms=arms,
            sequential=sequential,
            tuning_n=tuning_n,
        )
    else:
        assert users is not None
        result = minimum_detectable_effect(
            users,
            baseline,
            variance,
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
    design = "sequential" if sequential else "fixed-horizon"
    per_arm = result.users_by_arm[0] if result.users_by_arm else 0
    typer.echo(
        f"{kind} with baseline {baseline:g}: a {design} test at alpha {alpha:g} and "
        f"{power_:.0%} power"
    )
    typer.echo(
        f"  detects a relative lift of {(result.mde_relative or 0):+.2%} "
        f"({(result.mde_absolute or 0):+.4g} absolute)"
    )
    typer.echo(f"  with {per_arm:,} users per arm, {result.total_users or 0:,} in all")
    if days is not None and users_per_day:
        typer.echo(f"  {_days_text(days, users_per_day)}")


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
    from abeval.analysis.online import ReportOptions, build_report
    from abeval.report.html import render_html
    from abeval.report.text import render_text
    from abeval.simulate.demo import (
        EVENTS_FILE,
        TARGET_FILE,
        demo_config,
        ingest_experiment,
        write_demo_experiment,
    )
    from abeval.store import open_store

    out_dir.mkdir(parents=True, exist_ok=True)
    db = out_dir / "demo.duckdb"
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    config = demo_config(users, seed)
    events = out_dir / EVENTS_FILE
    typer.echo(f"simulating {users:,} users into {events}", err=True)
    write_demo_experiment(config, out_dir)
    with open_store(str(db)) as store:
        loaded = ingest_experiment(
            store, config.experiment, config.control, events, out_dir / TARGET_FILE
        )
        typer.echo(
            f"ingested {loaded.inserted:,} events in {loaded.seconds:.1f} s into {db}", err=True
        )
        report = build_report(store, config.experiment, ReportOptions(segment="device"))
    html_path = out_dir / f"{config.experiment}.html"
    html_path.write_text(render_html(report), encoding="utf-8")
    json_path = out_dir / f"{config.experiment}.json"
    json_path.write_text(json.dumps(report.to_dict(), indent=2, allow_nan=False), encoding="utf-8")
    width = shutil.get_terminal_size((100, 20)).columns
    typer.echo(render_text(report) if width >= 80 else "")
    _demo_history(out_dir, db, seed)
    typer.echo(_files_written(out_dir), err=True)
    typer.echo(f"report: {html_path}", err=True)
    typer.echo(f"json:   {json_path}", err=True)
    typer.echo(
        f"explore: abeval report --experiment {_q(config.experiment)} --db {_q(db)} --format text",
        err=True,
    )


def _files_written(out_dir: Path) -> str:
    """What the demo left in its folder: how many files and how big, the store
    and the event logs apart (the logs are Parquet; ``abeval ingest`` reads CSV,
    gzip'd CSV and JSON Lines alike)."""
    from abeval.formatting import size

    files = [p for p in out_dir.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    store = sum(p.stat().st_size for p in files if p.name.startswith("demo.duckdb"))
    logs = sum(p.stat().st_size for p in files if p.suffix == ".parquet")
    return (
        f"wrote {len(files)} files, {size(total)}, in {out_dir}: the store {size(store)}, "
        f"event logs and target probabilities (Parquet) {size(logs)}, reports and "
        f"held-out files {size(total - store - logs)}"
    )


def _q(value: object) -> str:
    """``value`` as one shell word, for a command the user may paste."""
    return shlex.quote(str(value))


def _demo_history(out_dir: Path, db: Path, seed: int) -> None:
    """The demo's history of experiments (:mod:`abeval.simulate.series`): files,
    logs ingested, then the evaluations recorded and the agreement board."""
    from abeval.simulate.demo import ingest_series, write_demo_series
    from abeval.store import open_store

    files = write_demo_series(out_dir, seed)
    with open_store(str(db)) as store:
        loaded = ingest_series(store, files)
    rows = sum(x.inserted for x in loaded)
    seconds = sum(x.seconds for x in loaded)
    folder = files[0].events.parent.parent
    typer.echo(
        f"history: {len(files)} experiments ({files[0].experiment.name} .. "
        f"{files[-1].experiment.name}), {rows:,} events ingested in {seconds:.1f} s; "
        f"logs, target propensities and held-out files in {folder}",
        err=True,
    )
    first = files[0]
    typer.echo(
        f"explore: abeval report -e {_q(first.experiment.name)} --db {_q(db)} --format text",
        err=True,
    )
    typer.echo(
        f"explore: abeval evaluate --truth {_q(first.truth)} "
        + " ".join(f"-r {_q(f'{arm}={path}')}" for arm, path in first.recommendations.items())
        + f" --experiment {_q(first.experiment.name)} --db {_q(db)}",
        err=True,
    )
    for f in files:
        _record_demo_evaluation(db, f)
    typer.echo(f"recorded: each history experiment's held-out evaluation ({len(files)})", err=True)
    board, board_page = _write_demo_board(db, out_dir)
    typer.echo(f"agreement board: {board_page}", err=True)
    typer.echo(
        f"explore: abeval agreement --db {_q(db)} --format text   (every experiment; off-policy "
        "estimates from the target probabilities recorded with each)",
        err=True,
    )
    _demo_forecast(out_dir, db, seed, board)


def _demo_forecast(out_dir: Path, db: Path, seed: int, board: AgreementBoard) -> None:
    """Forecast an untested candidate's CTR lift from the history, beside its
    true lift (known to the simulator), as ``abeval forecast -t ... -r ...`` does,
    from the board the demo has built (not built again)."""
    from abeval.analysis.forecast import ForecastOptions, build_forecast
    from abeval.analysis.forecast_candidate import evaluation_evidence
    from abeval.formatting import interval, pct
    from abeval.simulate.demo import write_demo_candidate
    from abeval.store import open_store

    c = write_demo_candidate(out_dir, seed)
    models = {"control": str(c.control), "candidate": str(c.candidate)}
    evidence = evaluation_evidence(c.truth, models)
    options = ForecastOptions(signal="ndcg@10", primary=("ctr",))
    with open_store(str(db), read_only=True) as store:
        f = build_forecast(store, evidence, options, board).forecasts[0]
    p = f.forecast
    typer.echo(
        f"forecast: an untested candidate (ndcg@10 {pct(p.offline_lift)} offline): CTR lift "
        f"{pct(p.point)}, 95% interval {interval(p.interval)} from {f.fit.k} experiments; "
        f"its true CTR lift (simulator): {pct(c.true_ctr_lift)}",
        err=True,
    )
    typer.echo(
        f"explore: abeval forecast --db {_q(db)} -t {_q(c.truth)} "
        f"-r {_q(f'control={c.control}')} -r {_q(f'candidate={c.candidate}')} --signal ndcg@10",
        err=True,
    )


def _record_demo_evaluation(db: Path, files: ExperimentFiles) -> None:
    """Record one history experiment's offline evaluation in the store, as
    ``abeval evaluate --truth T -r control=C -r treatment=T --experiment NAME``."""
    from abeval.analysis.evaluate.record import evaluate_for_experiment

    evaluate_for_experiment(
        str(db), files.experiment.name, files.truth, dict(files.recommendations)
    )


def _write_demo_board(db: Path, out_dir: Path) -> tuple[AgreementBoard, Path]:
    """Write the store's agreement board to ``out_dir/agreement.html``, as ``abeval
    agreement`` with no other option does: every experiment, the off-policy
    estimates from the target probabilities recorded with each. Returns the
    board and the page."""
    from abeval.analysis.agreement import agreement_board
    from abeval.files import write_atomic
    from abeval.report.agreement_html import render_html
    from abeval.store import open_store

    with open_store(str(db), read_only=True) as store:
        board = agreement_board(store)
    path = out_dir / "agreement.html"
    write_atomic(path, render_html(board))
    return board, path
