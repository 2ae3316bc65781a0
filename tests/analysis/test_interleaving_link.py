"""An interleaved experiment linked to the A/B test of the same two rankers
(``abeval experiment set X --interleaving-of Y``): the link recorded, shown and
forgotten, refused in one line for a name that is no A/B test, and Δ_AB on the
agreement board as the signal of source ``interleaving`` of its A/B test.

The history: four A/B tests of known CTR lift (tests/agreement_store.py) and,
for each, a team-draft interleaved run of the same two rankers (same user model).
The board's numbers are checked against their definitions: each pair's offline
lift is the Δ_AB that ``report`` gives the run, Spearman's ρ is scipy's over the
pairs, and sign agreement is counted by hand.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from agreement_store import LIFTS, simulate_experiment, simulate_interleaved_run, targets_of
from scipy.stats import spearmanr
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.simulate import SimulationConfig
from abeval.simulate.interleaved import simulate_interleaved

runner = CliRunner()


def _run(name: str) -> str:
    return f"{name}-interleaved"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The A/B tests and their interleaved runs, ingested; the runs linked."""
    work = tmp_path_factory.mktemp("interleaving-link")
    db = str(work / "history.duckdb")
    with abeval.open(db) as store:
        for seed, (name, lift) in enumerate(LIFTS.items(), start=11):
            events = simulate_experiment(work / f"{name}.csv", name, lift, seed, 800)
            store.ingest(events)
            store.set(name, target_propensities=targets_of(events))
            run = work / f"{_run(name)}.csv"
            store.ingest(simulate_interleaved_run(run, _run(name), lift, seed + 100, 600))
            store.set(_run(name), interleaving_of=name)
    return db


def _cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_link_is_shown_and_in_the_json(history: str) -> None:
    code, out, _ = _cli("experiment", "show", "exp-a-interleaved", "--db", history)
    assert code == 0
    assert "interleaving-of: exp-a (the A/B test of the same two rankers)" in out
    code, out, _ = _cli("experiment", "show", "exp-a-interleaved", "--db", history, "-f", "json")
    assert json.loads(out)["config"] == {"interleaving_of": "exp-a"}


@pytest.mark.parametrize(
    ("experiment", "of", "words"),
    [
        ("exp-a-interleaved", "nope", "no experiment 'nope' in the store"),
        ("exp-a", "exp-b", "experiment 'exp-a' is not interleaved"),
        ("exp-a-interleaved", "exp-b-interleaved", "'exp-b-interleaved' is itself interleaved"),
        ("exp-a-interleaved", "exp-a-interleaved", "cannot be an interleaving of itself"),
    ],
)
def test_a_link_to_no_ab_test_is_one_line_and_changes_nothing(
    history: str, experiment: str, of: str, words: str
) -> None:
    code, _, err = _cli("experiment", "set", experiment, "--interleaving-of", of, "--db", history)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --interleaving-of "), err
    assert words in lines[0]
    with abeval.open(history, read_only=True) as store:
        assert store.settings("exp-a-interleaved")[1].interleaving_of == "exp-a"
        assert store.settings("exp-a")[1].interleaving_of is None


def test_the_board_shows_delta_ab_as_the_ab_tests_interleaving_signal(history: str) -> None:
    with abeval.open(history, read_only=True) as store:
        board = store.agreement()
        deltas = {name: store.report(_run(name)).interleaving for name in LIFTS}
    pairs = [p for p in board.pairs if p.source == "interleaving" and p.online_metric == "ctr"]
    assert sorted(p.experiment for p in pairs) == sorted(LIFTS)
    for p in pairs:
        section = deltas[p.experiment]
        assert section is not None and section.team_a == p.arm == "treatment"
        assert p.signal == "interleaving" and p.independent
        assert p.offline_lift == pytest.approx(section.clicks.delta, abs=1e-12)
        assert p.offline_ci == pytest.approx(section.clicks.interval, abs=1e-12)
    row = next(s for s in board.summary if s.source == "interleaving" and s.online_metric == "ctr")
    online = [p.online_lift for p in pairs]
    offline = [p.offline_lift for p in pairs]
    assert row.experiments == len(LIFTS)
    assert row.spearman == pytest.approx(spearmanr(online, offline).statistic, abs=1e-12)
    agreeing = sum((a > 0) == (b > 0) for a, b in zip(online, offline, strict=True))
    assert row.agreeing_pairs == agreeing
    # the runs themselves are no A/B tests: each names the test it is a signal of
    runs = {c.experiment: c for c in board.experiments if c.experiment.endswith("-interleaved")}
    assert len(runs) == len(LIFTS)
    assert all(c.message.endswith(f"signal of {c.experiment[:5]}") for c in runs.values())


def test_unset_forgets_the_link(history: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(Path(history).read_bytes())
    code, _, err = _cli("experiment", "unset", "exp-b-interleaved", "--interleaving-of",
                        "--db", str(copy))  # fmt: skip
    assert code == 0, err
    assert "removed --interleaving-of" in err
    with abeval.open(str(copy), read_only=True) as store:
        assert store.settings("exp-b-interleaved")[1].interleaving_of is None
        board = store.agreement(experiments=["exp-b"])
    assert not [p for p in board.pairs if p.source == "interleaving"]


def test_the_forecast_takes_interleaving_as_its_signal(history: str) -> None:
    evidence = abeval.api.forecast_evidence(offline_lift=0.02, offline_se=0.01)
    with abeval.open(history, read_only=True) as store:
        report = store.forecast(evidence, signal="interleaving")
    ctr = next(f for f in report.forecasts if f.metric == "ctr")
    assert ctr.signal == "interleaving"
    assert ctr.fit.k == len(LIFTS)


def test_the_simulator_drafts_from_more_candidates_than_it_shows() -> None:
    config = replace(SimulationConfig(users=50), candidates=20)
    table = simulate_interleaved(config).to_pylist()
    shown: dict[str, list[str]] = {}
    for row in table:
        if row["event_type"] == "impression":
            shown.setdefault(row["request_id"], []).append(row["item_id"])
    assert shown and all(len(items) == len(set(items)) == 10 for items in shown.values())
