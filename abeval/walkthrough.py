"""``abeval demo`` as a sequence of steps (:func:`demo`): simulate an
experiment, load it into a fresh store, report on it, then simulate a history of
experiments, record their evaluations, build the agreement board and forecast an
untested candidate. Each step yields a line saying what it did, and the report
is yielded as it is, for the caller to show.

The files come from :mod:`abeval.simulate.demo`; everything else goes the way the
CLI's commands go: ``abeval.open`` and the public :class:`~abeval.api.store.Store`'s
methods (``ingest``, ``set``, ``report``, ``agreement``, ``forecast``),
``abeval.evaluate``, and the presenters of :mod:`abeval.render`.

It is a client of the public API, as the CLI is (which calls :func:`demo`), not
a part of it: nothing in :mod:`abeval.api` imports it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.api import AgreementBoard, IngestSummary, Store
    from abeval.choices import ExperimentStatus
    from abeval.simulate.series import ExperimentFiles


def _load(
    store: Store, experiment: str, control: str, events: Path, targets: Path
) -> IngestSummary:
    """Load one experiment's log and record its control arm and its target
    probabilities, as ``abeval ingest`` and ``abeval experiment set X --control ARM
    --target-propensities FILE`` do; the ingest's summary."""
    summary = store.ingest(events)
    store.set(experiment, control=control, target_propensities=targets)
    return summary


def demo(out_dir: str | Path, *, users: int = 30_000, seed: int = 7) -> Iterator[Any]:
    """``abeval demo``, step by step: simulate an experiment into ``out_dir``, load
    it into a fresh store there, report on it, then simulate a history of
    experiments, record their evaluations, build the agreement board and
    forecast a candidate. Yields, as it goes, a line saying what was done (a
    ``str``) or the experiment's report (the CLI prints its text).

    >>> from abeval.walkthrough import demo
    >>> for step in demo("demo", users=2_000):  # doctest: +SKIP
    ...     print(step if isinstance(step, str) else "report")
    """
    return run_demo(Path(out_dir), users, seed)


def run_demo(out_dir: Path, users: int, seed: int) -> Iterator[Any]:
    """The whole demo in ``out_dir`` (its store ``demo.duckdb`` made afresh)."""
    import abeval
    from abeval import render
    from abeval.simulate.demo import EVENTS_FILE, TARGET_FILE, demo_config, write_demo_experiment

    out_dir.mkdir(parents=True, exist_ok=True)
    db = out_dir / "demo.duckdb"
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    config = demo_config(users, seed)
    events = out_dir / EVENTS_FILE
    yield f"simulating {users:,} users into {events}"
    write_demo_experiment(config, out_dir)
    with abeval.open(db) as store:
        loaded = _load(store, config.experiment, config.control, events, out_dir / TARGET_FILE)
        yield f"ingested {loaded.inserted:,} events in {loaded.seconds:.1f} s into {db}"
        report = store.report(config.experiment, segment="device")
    html_path = out_dir / f"{config.experiment}.html"
    render.write(html_path, render.html(report))
    json_path = out_dir / f"{config.experiment}.json"
    document = render.json_document(report)
    render.write(json_path, json.dumps(document, indent=2, allow_nan=False))
    yield report
    # a candidate for the same page runs at the main experiment's traffic, not at the
    # small history series' (users per day of its analysis window)
    days = len({p.day for p in report.daily}) or 1
    yield from _history(out_dir, db, seed, report.health.users_analysed / days)
    yield _files_written(out_dir)
    yield f"report: {html_path}"
    yield f"json:   {json_path}"
    yield f"explore: abeval report --experiment {_q(config.experiment)} --db {_q(db)} --format text"


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


def _history(out_dir: Path, db: Path, seed: int, users_per_day: float) -> Iterator[str]:
    """The demo's history of experiments (:mod:`abeval.simulate.series`): files,
    logs ingested, then the evaluations recorded and the agreement board."""
    import abeval
    from abeval.simulate.demo import write_demo_series

    files = write_demo_series(out_dir, seed)
    with abeval.open(db) as store:
        loaded = [_load_planned(store, f) for f in files]
    rows = sum(x.inserted for x in loaded)
    seconds = sum(x.seconds for x in loaded)
    folder = files[0].events.parent.parent
    size = files[0].experiment.config
    yield (
        f"history: {len(files)} experiments ({files[0].experiment.name} .. "
        f"{files[-1].experiment.name}), {rows:,} events ingested in {seconds:.1f} s; "
        f"logs, target propensities and held-out files in {folder}"
    )
    yield (
        f"planned: each history experiment's plan ({size.users:,} users, {size.days} days) "
        "recorded after its first day's events were ingested, before the rest "
        "(experiment set X --plan-users N --plan-days D)"
    )
    first = files[0]
    yield f"explore: abeval report -e {_q(first.experiment.name)} --db {_q(db)} --format text"
    yield (
        f"explore: abeval evaluate --truth {_q(first.truth)} "
        + " ".join(f"-r {_q(f'{arm}={path}')}" for arm, path in first.recommendations.items())
        + f" --experiment {_q(first.experiment.name)} --db {_q(db)}"
    )
    for f in files:
        _record_evaluation(db, f)
    yield f"recorded: each history experiment's held-out evaluation ({len(files)})"
    runs = yield from _interleaved(db, files)
    board, board_page = _write_board(db, out_dir)
    yield f"agreement board: {board_page}"
    yield from _users_needed(db, runs, board)
    yield (
        f"explore: abeval agreement --db {_q(db)} --format text   (every experiment; off-policy "
        "estimates from the target probabilities recorded with each)"
    )
    yield _record_outcomes(db, [f.experiment.name for f in files])
    yield (
        f"explore: abeval program --db {_q(db)}   (every experiment: status, decision, lift; "
        "win rate and shipped impact; -f html -o program.html --with-reports reports)"
    )
    yield from _forecast(out_dir, db, seed, board, users_per_day)


#: Users of each history candidate's interleaved run against production.
INTERLEAVED_USERS = 800


def _load_planned(store: Store, files: ExperimentFiles) -> IngestSummary:
    """Load one history experiment as a team runs it: its first day's events (with
    the pre-period before it), then its control arm and plan (the simulated users
    and days) recorded, as ``abeval experiment set X --control ARM --plan-users N
    --plan-days D`` does, so that the plan is stamped as made before the result
    could be seen; then the rest of its events and its target probabilities
    (``--target-propensities FILE``, checked against all its requests). The two
    ingests' summary, summed."""
    from dataclasses import replace
    from datetime import timedelta

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    config = files.experiment.config
    events = pq.read_table(files.events)
    first_day = pc.less(events["ts"], config.start + timedelta(days=1))
    first = store.ingest(events.filter(first_day))
    name = files.experiment.name
    store.set(name, control=config.control, plan_users=config.users, plan_days=config.days)
    rest = store.ingest(events.filter(pc.invert(first_day)))
    store.set(name, target_propensities=files.target_propensities)
    return replace(
        rest, inserted=first.inserted + rest.inserted, seconds=first.seconds + rest.seconds
    )


def _interleaved(db: Path, files: list[ExperimentFiles]) -> Generator[str, None, dict[str, str]]:
    """Simulate a team-draft interleaved run of each history experiment's two rankers
    (same user model) into one file, ingest it and link each run to its A/B test, as
    ``abeval ingest`` and ``abeval experiment set X --interleaving-of Y`` do; returns
    run → A/B test."""
    import abeval
    from abeval.simulate.series import interleaved_config, write_interleaved

    history = [f.experiment for f in files]
    path = write_interleaved(history, files[0].events.parent.parent, INTERLEAVED_USERS)
    runs = {interleaved_config(e, INTERLEAVED_USERS).experiment: e.name for e in history}
    with abeval.open(db) as store:
        loaded = store.ingest(path)
        for run, ab_test in runs.items():
            store.set(run, interleaving_of=ab_test)
    first = next(iter(runs))
    yield (
        f"interleaved: each history candidate against production, team draft, "
        f"{INTERLEAVED_USERS:,} users each ({len(runs)} runs, {first} ..; "
        f"{loaded.inserted:,} events in {path}), each linked to its A/B test "
        "(experiment set RUN --interleaving-of TEST)"
    )
    yield f"explore: abeval report -e {_q(first)} --db {_q(db)} --format text"
    return runs


def _users_needed(db: Path, runs: dict[str, str], board: AgreementBoard) -> Iterator[str]:
    """For the demo population, the users interleaving needed to find the better
    ranker against those the A/B test needed, each by the power formula (80% power,
    α 0.05) on the variances observed in the runs: interleaving's for its observed
    Δ_AB, the A/B test's for the CTR lift the A/B test observed."""
    import statistics

    import abeval

    lifts = {
        p.experiment: abs(p.online_lift)
        for p in board.pairs
        if p.source == "interleaving" and p.online_metric == "ctr"
    }
    needed: list[tuple[int, int]] = []
    with abeval.open(db, read_only=True) as store:
        for run, ab_test in runs.items():
            if not lifts.get(ab_test):
                continue
            plan = store.plan(run, mde=lifts[ab_test]).interleaving
            if plan is not None and plan.users_needed and plan.ab_users:
                needed.append((plan.users_needed, plan.ab_users))
    if not needed:
        return
    inter = statistics.median(n for n, _ in needed)
    ab = statistics.median(n for _, n in needed)
    ratio = statistics.median(a / n for n, a in needed)
    yield (
        f"interleaving needed a median {inter:,.0f} users to find the better ranker, the A/B "
        f"test {ab:,.0f} (median {ratio:,.0f}× fewer; {len(needed)} candidates; the power "
        "formula at 80% power, α 0.05, on each run's observed Δ_AB and variances against the "
        "CTR lift its A/B test observed)"
    )
    yield f"explore: abeval power --experiment {_q(next(iter(runs)))} --db {_q(db)}"
    yield (
        f"explore: abeval forecast --db {_q(db)} --signal interleaving --offline-lift 0.03 "
        "--offline-se 0.01   (a candidate's Δ_AB from its own interleaved run, as evidence)"
    )


def _parts(files: ExperimentFiles) -> tuple[str, Path, Path]:
    """A history experiment's control arm, log and target probabilities."""
    return files.experiment.config.control, files.events, files.target_propensities


def _forecast(
    out_dir: Path, db: Path, seed: int, board: AgreementBoard, users_per_day: float
) -> Iterator[str]:
    """Forecast an untested candidate's CTR lift from the history, beside its
    true lift (known to the simulator), as ``abeval forecast -t ... -r ...`` does,
    from the board the demo has built (not built again), its test sized at
    ``users_per_day`` (the main experiment's)."""
    import abeval
    from abeval import render
    from abeval.api import forecast_evidence
    from abeval.formatting import interval, pct
    from abeval.simulate.demo import write_demo_candidate

    c = write_demo_candidate(out_dir, seed)
    models = {"control": str(c.control), "candidate": str(c.candidate)}
    evidence = forecast_evidence(truth=c.truth, recommendations=models)
    with abeval.open(db, read_only=True) as store:
        report = store.forecast(
            evidence, signal="ndcg@10", board=board, users_per_day=round(users_per_day)
        )
    f = next(m for m in report.forecasts if m.metric == "ctr")
    p = f.forecast
    # the text presenter's lines for ctr: which signal and why, then the go / no-go
    text = render.text(report).splitlines()
    head = next(i for i, line in enumerate(text) if line.startswith("ctr, from "))
    yield f"forecast: {text[head]}"
    yield (
        f"forecast: an untested candidate (ndcg@10 {pct(p.offline_lift)} offline): CTR lift "
        f"{pct(p.point)}, 95% interval {interval(p.interval)} from {f.fit.k} experiments; "
        f"its true CTR lift (simulator): {pct(c.true_ctr_lift)}"
    )
    yield f"forecast: {text[head + 1].strip()}"
    yield (
        f"explore: abeval forecast --db {_q(db)} -t {_q(c.truth)} "
        f"-r {_q(f'control={c.control}')} -r {_q(f'candidate={c.candidate}')} --signal ndcg@10 "
        f"--users-per-day {round(users_per_day)}   (the main experiment's traffic)"
    )


def _record_evaluation(db: Path, files: ExperimentFiles) -> None:
    """Record one history experiment's offline evaluation in the store, as
    ``abeval evaluate --truth T -r control=C -r treatment=T --experiment NAME``."""
    import abeval

    abeval.evaluate(
        files.truth, dict(files.recommendations), experiment=files.experiment.name, db=db
    )


#: The status a history experiment is recorded with, by its report's decision at
#: its planned end: shipped when it decides ship, rolled back when it decides roll
#: back or no effect, abandoned otherwise (keep running at the plan, or invalid:
#: the team stops the test without a verdict and keeps production).
STATUS_OF_DECISION: dict[str, ExperimentStatus] = {
    "ship": "shipped",
    "roll_back": "rolled_back",
    "no_effect": "rolled_back",
}


def _record_outcomes(db: Path, names: list[str]) -> str:
    """Record what was decided about each history experiment, as ``abeval
    experiment set X --status shipped|rolled_back|abandoned --decided-on DATE
    --owner demo --tag history`` does: what its report decides at its planned end
    (:data:`STATUS_OF_DECISION`; the report read without the offline replay and
    the off-policy estimates, which the decision does not read), on the day after
    its last event."""
    from datetime import date, timedelta

    import abeval
    from abeval.api import report_options

    quick = report_options(offline=False, ope=False)
    counts: dict[str, int] = {"shipped": 0, "rolled_back": 0, "abandoned": 0}
    with abeval.open(db) as store:
        last = {e.experiment: e.last_ts for e in store.experiments()}
        for name in names:
            if last.get(name) is None:
                continue
            decided = store.report(name, quick).decisions
            verdict = decided[0].decision if decided else "invalid"
            status = STATUS_OF_DECISION.get(verdict, "abandoned")
            counts[status] += 1
            day = date.fromisoformat(str(last[name])[:10]) + timedelta(days=1)
            store.set(name, status=status, decided_on=day, owner="demo", tag="history")
    return (
        "recorded: what was decided about the history experiments, as each report decides "
        f"at its planned end ({counts['shipped']} shipped, {counts['rolled_back']} rolled back, "
        f"{counts['abandoned']} abandoned: not decided at the plan)"
    )


def _write_board(db: Path, out_dir: Path) -> tuple[AgreementBoard, Path]:
    """Write the store's agreement board to ``out_dir/agreement.html``, as ``abeval
    agreement`` with no other option does: every experiment, the off-policy
    estimates from the target probabilities recorded with each. Returns the
    board and the page."""
    import abeval
    from abeval import render

    with abeval.open(db, read_only=True) as store:
        board = store.agreement()
    path = out_dir / "agreement.html"
    render.write(path, render.html(board))
    return board, path
