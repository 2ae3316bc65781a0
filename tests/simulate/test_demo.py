"""``abeval demo``: the demo experiment and its report, and the simulated history
it adds to the demo store (docs/metrics.md#simulated-history). The history must
recover the relation the simulator built into it: the offline NDCG lift, which
follows each treatment's quality, ranks the experiments as the observed online
CTR lift does; coverage and novelty, moved by a knob that does not change clicks,
do not.

The online lift is computed here from the definition of CTR (clicks over
impressions from each user's exposure on, docs/metrics.md#ctr) on the store's
events; the offline lifts with ``abeval.analysis.evaluate.evaluate`` on the
held-out files; the correlations with scipy."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.stats import spearmanr
from sqlalchemy import text
from typer.testing import CliRunner

from abeval.analysis.evaluate import evaluate
from abeval.cli import app
from abeval.simulate.series import ExperimentFiles, SeriesConfig, series, write_series
from abeval.store import open_store
from abeval.store.database import Database
from abeval.store.experiments import get_settings, list_experiments
from abeval.store.ingest import ingest_file

runner = CliRunner()

# The whole demo is built once for this module (about 45 s on a quiet machine): it runs
# with the larger simulations under `make test-slow`, which CI runs after `make test`.
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Demo:
    folder: Path
    stderr: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    out = tmp_path_factory.mktemp("demo")
    result = runner.invoke(app, ["demo", "--out-dir", str(out), "--users", "1500"])
    assert result.exit_code == 0, result.output
    return Demo(out, result.stderr)


def _online_ctr_lift(store: Database, experiment: str) -> float:
    with store.connect() as conn:
        rows = conn.execute(
            text(
                "WITH e AS (SELECT *, MIN(ts) FILTER (WHERE event_type = 'exposure') "
                "OVER (PARTITION BY user_id) AS exposed FROM events WHERE experiment = :x) "
                "SELECT arm, COUNT(*) FILTER (WHERE event_type = 'click'), "
                "COUNT(*) FILTER (WHERE event_type = 'impression') FROM e "
                "WHERE ts >= exposed GROUP BY arm"
            ),
            {"x": experiment},
        ).fetchall()
    ctr = {arm: clicks / impressions for arm, clicks, impressions in rows}
    return float(ctr["treatment"] / ctr["control"] - 1)


def _offline_lifts(files: ExperimentFiles) -> dict[str, float]:
    result = evaluate(
        files.truth,
        [files.recommendations["control"], files.recommendations["treatment"]],
        k=(10,),
        metrics="ndcg@10,coverage@10,novelty@10",
        resamples=50,
    )

    def lift(metric: str) -> float:
        treatment = result.metric(metric, "treatment").value
        control = result.metric(metric, "control").value
        assert treatment is not None and control
        return float(treatment / control - 1)

    return {m: lift(m) for m in ("ndcg@10", "coverage@10", "novelty@10")}


def _relation(store: Database, files: list[ExperimentFiles]) -> dict[str, np.ndarray]:
    online = [_online_ctr_lift(store, f.experiment.name) for f in files]
    offline = [_offline_lifts(f) for f in files]
    out = {m: np.array([o[m] for o in offline]) for m in offline[0]}
    out["online"] = np.array(online)
    out["quality"] = np.array([f.experiment.ctr_lift for f in files])
    return out


def _files_of(folder: Path) -> list[ExperimentFiles]:
    """The demo's history, found where the demo says it writes it."""
    out = []
    for e in series(SeriesConfig(seed=7)):
        d = folder / e.name
        recs = {arm: d / f"{arm}.csv" for arm in e.config.arms}
        target = d / "target_propensities.parquet"
        out.append(ExperimentFiles(e, d / "events.parquet", target, d / "truth.csv", recs))
    return out


def test_demo_writes_the_report_and_the_history(demo: Demo) -> None:
    demo_dir, stderr = demo.folder, demo.stderr
    assert (demo_dir / "home-reco-v2.html").is_file() and (demo_dir / "home-reco-v2.json").is_file()
    history = next(line for line in stderr.splitlines() if line.startswith("history: "))
    assert history.startswith("history: 12 experiments (series-01 .. series-12), ")
    assert history.endswith(f"held-out files in {demo_dir / 'series'}")
    for f in _files_of(demo_dir / "series"):
        for path in (f.events, f.target_propensities, f.truth, *f.recommendations.values()):
            assert path.is_file(), path
    with open_store(str(demo_dir / "demo.duckdb"), read_only=True) as store:
        names = [x.experiment for x in list_experiments(store)]
        history = [(f"series-{i:02d}", f"series-{i:02d}-interleaved") for i in range(1, 13)]
        assert names == ["home-reco-v2", *(name for pair in history for name in pair)]
        with store.connect() as conn:
            for name in ["home-reco-v2", *(ab_test for ab_test, _ in history)]:
                assert get_settings(conn, name).control_arm == "control"
            stored = dict(
                conn.execute(
                    text("SELECT experiment, COUNT(*) FROM events GROUP BY experiment")
                ).fetchall()
            )
    for f in _files_of(demo_dir / "series"):
        rows = pq.ParquetFile(f.events).metadata.num_rows
        assert stored[f.experiment.name] == rows  # every row ingested, none rejected


def test_demo_says_what_it_wrote_and_how_big(demo: Demo) -> None:
    """The logs are Parquet (the demo's 30,000 users wrote 417 MB of CSV), and the
    demo's last lines say how many files it left and their size."""
    files = [p for p in demo.folder.rglob("*") if p.is_file()]
    assert not [
        p
        for p in files
        if p.name.startswith(("events.", "target_propensities.")) and p.suffix != ".parquet"
    ]
    total_mb = sum(p.stat().st_size for p in files) / 1e6
    line = next(x for x in demo.stderr.splitlines() if x.startswith("wrote "))
    assert line.startswith(
        f"wrote {len(files)} files, {total_mb:.1f} MB, in {demo.folder}: the store "
    )


def test_demo_says_how_to_explore_the_history(demo: Demo) -> None:
    first = _files_of(demo.folder / "series")[0]
    db = demo.folder / "demo.duckdb"
    report = f"abeval report -e series-01 --db {db} --format text"
    recs = first.recommendations
    evaluate_line = (
        f"abeval evaluate --truth {first.truth} -r control={recs['control']} "
        f"-r treatment={recs['treatment']} --experiment series-01 --db {db}"
    )
    assert f"explore: {report}" in demo.stderr.splitlines()
    assert f"explore: {evaluate_line}" in demo.stderr.splitlines()
    assert f"explore: abeval agreement --db {db} --format text   (every experiment" in demo.stderr
    # the report line, as JSON: off-policy estimates from the recorded true probabilities
    args = ["report", "-e", "series-01", "--db", str(db), "--format", "json", "--no-offline"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    ope = json.loads(result.stdout)["ope"]
    assert (ope["target_origin"], ope["file"]) == ("recorded", str(first.target_propensities))
    assert ope["warnings"] == [] and len(ope["directions"]) == 2
    for direction in ope["directions"]:
        assert direction["target_probabilities"] == "recorded"
        assert direction["evidence"] == "prediction"
        assert abs(direction["diagnostics"]["mean_weight"] - 1) < 0.02


def test_every_demo_experiment_has_its_target_probabilities_recorded(demo: Demo) -> None:
    """The demo experiment's report shows its off-policy estimates as predictions
    from the recorded exact probabilities, without a warning."""
    files = _files_of(demo.folder / "series")
    db = str(demo.folder / "demo.duckdb")
    with open_store(db, read_only=True) as store, store.connect() as conn:
        recorded = dict(conn.execute(text("SELECT experiment, file FROM target_files")).fetchall())
    expected = {f.experiment.name: str(f.target_propensities) for f in files}
    expected["home-reco-v2"] = str(demo.folder / "target_propensities.parquet")
    assert recorded == expected
    doc = json.loads((demo.folder / "home-reco-v2.json").read_text())
    ope = doc["ope"]
    assert ope["status"] == "ok" and ope["target_origin"] == "recorded"
    assert ope["warnings"] == []
    assert all(d["varying_target"] is None for d in ope["directions"])
    assert {d["evidence"] for d in ope["directions"]} == {"prediction"}
    assert all(abs(d["diagnostics"]["mean_weight"] - 1) < 0.02 for d in ope["directions"])


def test_demo_history_recovers_its_relation(demo: Demo) -> None:
    demo_dir = demo.folder
    files = _files_of(demo_dir / "series")
    with open_store(str(demo_dir / "demo.duckdb"), read_only=True) as store:
        r = _relation(store, files)
    # the online lifts are the configured ones, up to noise
    assert spearmanr(r["online"], r["quality"]).statistic > 0.8
    assert np.abs(r["online"] - r["quality"]).max() < 0.08
    # the signal that drives clicks: clearly positive, significant
    ndcg = spearmanr(r["ndcg@10"], r["online"])
    assert ndcg.statistic > 0.7 and ndcg.pvalue < 0.01
    # the signals moved by the popularity tilt alone: near zero, not significant,
    # though they vary across experiments as much as NDCG does
    for metric in ("coverage@10", "novelty@10"):
        rho = spearmanr(r[metric], r["online"])
        assert abs(rho.statistic) < 0.4 and rho.pvalue > 0.2, (metric, rho)
    assert np.ptp(r["novelty@10"]) > 0.5 * np.ptp(r["ndcg@10"])


def test_demo_records_the_evaluations_and_writes_the_board(demo: Demo) -> None:
    """Each history experiment's held-out evaluation is recorded against it (the
    control's model the baseline), and the board is the store's, with no option:
    the signals that follow the treatments' quality, recorded NDCG and the
    off-policy estimates from the recorded probabilities, rank well above the
    replayed diversity."""
    from abeval.analysis.agreement import AgreementOptions
    from abeval.analysis.agreement_board import agreement_board
    from abeval.store.evaluations import latest_evaluations

    files = _files_of(demo.folder / "series")
    board_path = demo.folder / "agreement.html"
    assert f"agreement board: {board_path}" in demo.stderr.splitlines()
    page = board_path.read_text(encoding="utf-8")
    # 13 A/B tests and the 12 interleaved runs, each a signal of its test
    assert "<svg" in page and 'data-field="experiments">25<' in page and "home-reco-v2" in page
    with open_store(str(demo.folder / "demo.duckdb"), read_only=True) as store:
        recorded = latest_evaluations(store)
        assert sorted(recorded) == [f.experiment.name for f in files]
        for evaluation in recorded.values():
            ndcg = evaluation.metric("treatment", "ndcg@10")
            assert ndcg is not None and ndcg.baseline_arm == "control"
        board = agreement_board(store, AgreementOptions(resamples=200))
    rho = {
        (s.source, s.signal): s.spearman
        for s in board.summary
        if s.online_metric == "ctr" and s.spearman is not None
    }
    assert rho[("evaluation", "ndcg@10")] > 0.7
    assert rho[("ope", "snips")] > 0.7
    assert abs(rho[("replay", "diversity@10")]) < 0.5
    assert all(p.independent for p in board.pairs if p.source == "ope")


def _readme_claim() -> dict[str, float]:
    """The numbers the README's demo paragraph states, read from its text."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    found = re.search(
        r"the off-policy estimates rank the 13 experiments' CTR lifts with a Spearman "
        r"correlation of (?P<rho>[0-9.]+); their mean z is (?P<z>[-−+0-9.]+) and (?P<share>\d+)% "
        r"of them have \|z\| < 1\.96",
        " ".join(readme.split()),
    )
    assert found, "the README's demo paragraph no longer states the board's claim"
    return {
        "rho": float(found["rho"]),
        "z": float(found["z"].replace("−", "-")),
        "share": float(found["share"]) / 100,
    }


def test_the_readme_claim_is_what_abeval_agreement_prints(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``abeval agreement --db demo/demo.duckdb`` with no other option writes the
    page ``reports/agreement.html``: its snips row and z row carry the README's
    numbers, and ``--format text`` prints the same. The README quotes the full
    demo (30,000 users in home-reco-v2); this one has 1,500 there, so one
    experiment of 13 differs: Spearman must match to 0.05, the mean z to 3/13
    (that experiment's z moving by up to 3) and the share of |z| < 1.96 to one
    experiment."""
    from html_tree import parse

    claim = _readme_claim()
    db = str(demo.folder / "demo.duckdb")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["agreement", "--db", db])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"wrote {Path('reports') / 'agreement.html'}\n"
    page = parse((tmp_path / "reports" / "agreement.html").read_text(encoding="utf-8"))
    table = page.find("table", class_="agreement", data_metric="ctr")
    rho = float(table.find("tr", data_signal="snips", data_source="ope").field("spearman"))
    z_row = page.find("table", class_="z-scores", data_metric="ctr").find("tr", data_signal="snips")
    z_mean, z_within = float(z_row.field("z-mean")), float(z_row.field("z-within")[:-1]) / 100
    assert abs(rho - claim["rho"]) <= 0.05
    assert abs(z_mean - claim["z"]) <= 3 / 13
    assert abs(z_within - claim["share"]) <= 1 / 13 + 1e-9
    text_out = runner.invoke(app, ["agreement", "--db", db, "--format", "text"]).stdout
    lines = text_out.splitlines()
    start = lines.index(
        "Online metric: ctr (ranked by LOO gain, best first; independent signals first)"
    )
    block = lines[start : lines.index("", start)]
    snips = next(x.split() for x in block if x.split()[:2] == ["snips", "off-policy"])
    assert float(snips[4]) == rho  # signal, source, LOO gain, experiments, Spearman
    z_start = next(i for i, x in enumerate(lines) if i > start and "predicted against" in x)
    z_block = lines[z_start : lines.index("", z_start)]
    z_text = next(x.split() for x in z_block if x.split()[:2] == ["snips", "off-policy"])
    assert (float(z_text[3]), z_text[4]) == (z_mean, z_row.field("z-within"))


@pytest.mark.slow
def test_a_bigger_history_recovers_its_relation_tightly(tmp_path: Path) -> None:
    base = SeriesConfig().base
    s = SeriesConfig(seed=11, heldout_users=5_000, base=replace(base, users=5_000))
    files = write_series(tmp_path, s)
    with open_store(str(tmp_path / "s.duckdb")) as store:
        for f in files:
            assert ingest_file(store, f.events).rejected == 0
        r = _relation(store, files)
    assert spearmanr(r["online"], r["quality"]).statistic > 0.9
    ndcg = spearmanr(r["ndcg@10"], r["online"])
    assert ndcg.statistic > 0.85 and ndcg.pvalue < 0.001
    expected = np.array([f.experiment.expected_ndcg_lift for f in files])
    assert np.abs(r["ndcg@10"] - expected).max() < 0.03
    for metric in ("coverage@10", "novelty@10"):
        rho = spearmanr(r[metric], r["online"])
        assert abs(rho.statistic) < 0.4 and rho.pvalue > 0.2, (metric, rho)


def test_demo_ends_with_a_forecast_beside_the_true_lift(demo: Demo) -> None:
    """The last lines: an untested candidate's CTR lift forecast from the history's
    recorded ndcg@10, and its true lift (known to the simulator)."""
    from abeval.simulate.demo import CANDIDATE_CTR_LIFT

    lines = demo.stderr.splitlines()
    forecast = next(line for line in lines if line.startswith("forecast: an untested"))
    # before it, the signal and why; after it, the go / no-go
    before, after = lines[lines.index(forecast) - 1], lines[lines.index(forecast) + 1]
    assert before.startswith("forecast: ctr, from ndcg@10: given by --signal (rank ")
    assert re.match(r"forecast: (Go: test it\. |Test if cheap: |No-go: )P\(lift > 0\) ", after)
    match = re.fullmatch(
        r"forecast: an untested candidate \(ndcg@10 ([+-][\d.]+)% offline\): CTR lift "
        r"([+-][\d.]+)%, 95% interval \[([+-][\d.]+)%, ([+-][\d.]+)%\] from 12 experiments; "
        r"its true CTR lift \(simulator\): ([+-][\d.]+)%",
        forecast,
    )
    assert match, forecast
    offline, point, low, high, true = (float(v) / 100 for v in match.groups())
    assert true == pytest.approx(CANDIDATE_CTR_LIFT)
    assert offline > 0 and low < point < high
    candidate = demo.folder / "candidate"
    # the test is sized at the main experiment's users per day of its days, read
    # from its JSON report (not the small history series' median)
    main = json.loads((demo.folder / "home-reco-v2.json").read_text())
    days = len({p["day"] for p in main["daily"]})
    main_rate = main["health"]["users_analysed"] / days
    explore = (
        f"explore: abeval forecast --db {demo.folder / 'demo.duckdb'} -t {candidate / 'truth.csv'} "
        f"-r control={candidate / 'control.csv'} -r candidate={candidate / 'candidate.csv'} "
        f"--signal ndcg@10 --users-per-day {round(main_rate)}   (the main experiment's traffic)"
    )
    assert lines[lines.index(forecast) + 2] == explore


def test_demo_links_an_interleaved_run_of_each_candidate_and_boards_it(demo: Demo) -> None:
    """Each history candidate has a team-draft run against production, linked to its
    A/B test; the board shows its Δ_AB as the interleaving signal, which ranks the
    CTR lifts as the candidates' qualities do; the demo says how many users
    interleaving needed against the A/B test, fewer."""
    import abeval

    files = _files_of(demo.folder / "series")
    db = str(demo.folder / "demo.duckdb")
    with abeval.open(db, read_only=True) as store:
        links = {f.experiment.name: store.settings(f"{f.experiment.name}-interleaved")[1]
                 for f in files}  # fmt: skip
        board = store.agreement(resamples=200)
        report = store.report("series-01-interleaved")
    assert {name: c.interleaving_of for name, c in links.items()} == {n: n for n in links}
    assert report.interleaving is not None and report.interleaving.team_b == "control"
    pairs = [p for p in board.pairs if p.source == "interleaving" and p.online_metric == "ctr"]
    assert sorted(p.experiment for p in pairs) == sorted(links)
    quality = {f.experiment.name: f.experiment.ctr_lift for f in files}
    rho = spearmanr([quality[p.experiment] for p in pairs], [p.offline_lift for p in pairs])
    assert rho.statistic > 0.7
    line = next(x for x in demo.stderr.splitlines() if x.startswith("interleaving needed"))
    found = re.search(r"a median ([\d,]+) users .* the A/B test ([\d,]+) ", line)
    assert found, line
    assert int(found[1].replace(",", "")) < int(found[2].replace(",", ""))
    assert "the power formula at 80% power" in line


def test_demo_records_what_was_decided_and_says_how_to_see_the_program(demo: Demo) -> None:
    """The history experiments are recorded as their reports decide at the planned
    end (ship: shipped; roll back or no effect: rolled back; else abandoned; owner
    demo, tag history), decided the day after their last event; the line counts
    them and the next one names `abeval program`."""
    from datetime import date, timedelta

    import abeval
    from abeval.api import report_options

    db = demo.folder / "demo.duckdb"
    lines = demo.stderr.splitlines()
    match = next(
        re.fullmatch(
            r"recorded: what was decided about the history experiments, as each report decides "
            r"at its planned end \((\d+) shipped, (\d+) rolled back, (\d+) abandoned: not "
            r"decided at the plan\)",
            line,
        )
        for line in lines
        if line.startswith("recorded: what was decided")
    )
    assert match is not None
    explore = f"explore: abeval program --db {db}   (every experiment: status, decision, lift;"
    assert lines[lines.index(match.group(0)) + 1].startswith(explore)
    expected = {"ship": "shipped", "roll_back": "rolled_back", "no_effect": "rolled_back"}
    statuses: dict[str, int] = {}
    with abeval.open(db, read_only=True) as store:
        last = {e.experiment: e.last_ts for e in store.experiments()}
        for name in sorted(last):
            o = store.experiment(name).outcome
            if name == "home-reco-v2" or name.endswith("-interleaved"):
                assert o.status is None  # the runs are evidence about their A/B tests
                continue
            assert (o.owner, o.tags) == ("demo", ("history",))
            decision = store.report(name, report_options(offline=False, ope=False)).decisions[0]
            assert decision.basis == "fixed_plan_reached"
            assert o.status == expected.get(decision.decision, "abandoned")
            day = date.fromisoformat(str(last[name])[:10]) + timedelta(days=1)
            assert o.decided_on == day.isoformat()
            statuses[o.status] = statuses.get(o.status, 0) + 1
    counts = dict(zip(("shipped", "rolled_back", "abandoned"), match.groups(), strict=True))
    assert statuses == {k: int(v) for k, v in counts.items() if int(v)}
    assert len(statuses) > 1  # the reports decide, not "keep running" everywhere


def test_demo_history_plans_are_recorded_before_the_result(demo: Demo) -> None:
    """Each history experiment's plan is its simulated size, recorded on its first
    day's data: the stamp does not say it was made after the result could be seen."""
    import abeval

    db = demo.folder / "demo.duckdb"
    with abeval.open(db, read_only=True) as store:
        for f in _files_of(demo.folder / "series"):
            config = store.experiment(f.experiment.name).config
            c = f.experiment.config
            assert (config.plan_users, config.plan_days) == (c.users, c.days)
            stamp = config.plan_recorded
            assert stamp is not None and not stamp.after_data
            assert stamp.days == 1 and 0 < stamp.users < c.users
    assert "planned: each history experiment's plan (1,500 users, 14 days)" in demo.stderr
