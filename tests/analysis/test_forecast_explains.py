"""``abeval forecast`` explains itself (issue 34 item 3): which signal and why,
where the test's traffic comes from, and a go / no-go by the rule of
docs/usage.md#forecast-the-online-lift.

The store here is built by hand: three experiments of different sizes and
dates, the latest the smallest, so the median traffic and the latest's differ.
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pytest
from agreement_store import RECORDED, evaluation
from ingest_store import run

from abeval.analysis.forecast_choice import (
    GO_P,
    NO_GO_P,
    recommend,
    traffic,
)
from abeval.simulate import SimulationConfig, simulate_with_target, write_events
from abeval.store import open_store
from abeval.store.evaluations import record_evaluation
from abeval.store.ingest import ingest_file

#: experiment -> (start, users, days, true CTR lift, recorded ndcg@10 difference).
EXPERIMENTS = {
    "big-jan": (datetime(2025, 1, 6, tzinfo=UTC), 3000, 5, -0.10, -0.010),
    "mid-feb": (datetime(2025, 2, 3, tzinfo=UTC), 1600, 4, 0.05, 0.004),
    "small-mar": (datetime(2025, 3, 3, tzinfo=UTC), 500, 6, 0.20, 0.020),
}


def _rate(events: Path, *, from_exposure: bool = True) -> float:
    """Users (every arm) per day of the experiment's analysis window, from its first
    exposure (else its first event, the pre-period's) to its last event, a day at
    least, from the file."""
    import pandas as pd

    ev = pd.read_csv(events, parse_dates=["ts"])
    start = ev.ts[ev.event_type == "exposure"].min() if from_exposure else ev.ts.min()
    days = (ev.ts.max() - start).total_seconds() / 86400.0
    return ev.user_id.nunique() / max(days, 1.0)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, float]]:
    """The store, and each experiment's users per day read from its events file."""
    folder = tmp_path_factory.mktemp("forecast-explains")
    db = str(folder / "store.duckdb")
    rates = {}
    with open_store(db) as s:
        for seed, (name, (start, users, days, lift, diff)) in enumerate(EXPERIMENTS.items()):
            config = SimulationConfig(
                experiment=name, users=users, seed=40 + seed, start=start, days=days,
                pre_period_days=3, segments={}, true_ctr_lift={"treatment": lift},
                true_conversion_lift={"treatment": 0.0},
            )  # fmt: skip
            events, _ = simulate_with_target(config)
            path = folder / f"{name}.csv"
            write_events(events, path)
            rates[name] = _rate(path)
            # the pre-period is not the experiment's traffic: the rate from the first
            # event would be another
            assert _rate(path, from_exposure=False) < 0.9 * rates[name]
            ingest_file(s, path)
            RECORDED[name] = (0.20, diff, 0.003)
            try:
                record_evaluation(s, evaluation(name))
            finally:
                del RECORDED[name]
    return db, rates


def _forecast(db: str, *extra: str) -> dict:
    result = run(
        "forecast", "--db", db, "--offline-lift", "0.02", "--offline-se", "0.004",
        "--primary", "ctr", "-f", "json", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["forecast"]


def test_traffic_is_the_median_of_the_experiments_not_the_latest(
    store: tuple[str, dict[str, float]],
) -> None:
    db, rates = store
    f = _forecast(db)
    expected = statistics.median(rates.values())
    latest = rates["small-mar"]
    assert abs(expected - latest) > 0.2 * expected  # the store tells them apart
    assert f["traffic"] == {
        "metric": "ctr",
        "source": "median_of_experiments",
        "users_per_day": pytest.approx(expected, rel=1e-6),
        "experiments": 3,
        "names": ["big-jan", "mid-feb", "small-mar"],
    }
    assert f["users_per_day"] == pytest.approx(expected, rel=1e-6)
    text = run(
        "forecast", "--db", db, "--offline-lift", "0.02", "--offline-se", "0.004",
        "--primary", "ctr", "-f", "text", "-o", "-",
    ).stdout  # fmt: skip
    assert (
        f"  Traffic: {expected:,.0f} users a day: the median of 3 experiments measuring ctr "
        "(big-jan, mid-feb, small-mar), each over its days from first exposure to last event"
    ) in text
    if f["users"] is not None:
        assert f["days"] == pytest.approx(f["users"] / expected, rel=1e-6)


def test_the_signal_and_why(store: tuple[str, dict[str, float]]) -> None:
    db, _ = store
    f = _forecast(db)
    c = f["choice"]
    assert f["signal"] == c["signal"] == "ndcg@10"  # the only independent signal recorded
    assert c["reason"] == "best_on_board" and c["rank"] == 1
    # 3 experiments: too few to score leaving one out, so the board ranks by family-wise p
    assert c["criterion"] == "familywise_p" and c["experiments"] == 3
    board = run("agreement", "--db", db, "--primary", "ctr", "-f", "json")
    rows = json.loads(board.stdout)["summary"]
    first = next(r for r in rows if r["online_metric"] == "ctr" and r["rank"] == 1)
    assert (first["signal"], first["source"]) == ("ndcg@10", "evaluation")
    assert c["spearman"] == pytest.approx(first["spearman"])
    assert first["predictive_gain"] is None
    assert c["value"] == pytest.approx(first["familywise_p"])
    given = _forecast(db, "--signal", "ndcg@10", "--users-per-day", "250")
    assert given["choice"]["reason"] == "given"
    assert given["traffic"]["source"] == "given" and given["users_per_day"] == 250
    text = run(
        "forecast", "--db", db, "--offline-lift", "0.02", "--offline-se", "0.004",
        "--primary", "ctr",
    ).stdout  # fmt: skip
    head = next(line for line in text.splitlines() if line.startswith("ctr, from "))
    assert head.startswith("ctr, from ndcg@10: the board's best predictor of ctr (ρ ")
    assert "the median of 3 experiments measuring ctr" in text


def test_the_go_no_go_reads_the_forecast(store: tuple[str, dict[str, float]]) -> None:
    """P(lift > 0) and P(lift > MDE) of the JSON are those of the forecast; the
    verdict follows the rule from them and the days at the traffic."""
    db, _ = store
    f = _forecast(db, "--users-per-day", "1000000", "--max-days", "10")
    r = f["recommendation"]
    assert r["p_positive"] == f["p_positive"] and r["p_above_mde"] == f["p_above_mde"]
    assert r["max_days"] == 10 and r["users"] == f["users"]
    p = f["p_positive"]
    feasible = f["days"] is not None and f["days"] <= 10
    expected = "no_go" if p < NO_GO_P else "go" if p >= GO_P and feasible else "test_if_cheap"
    assert r["verdict"] == expected


@pytest.mark.parametrize(
    ("p", "days", "verdict"),
    [
        (0.95, 10.0, "go"),
        (0.80, 28.0, "go"),  # both bounds are inclusive
        (0.95, 28.5, "test_if_cheap"),  # worth it, but too long a test
        (0.95, None, "test_if_cheap"),  # traffic unknown: cannot say it is feasible
        (0.79, 3.0, "test_if_cheap"),
        (0.50, 3.0, "test_if_cheap"),
        (0.49, 3.0, "no_go"),
        (None, None, "no_forecast"),
    ],
)
def test_the_rule(p: float | None, days: float | None, verdict: str) -> None:
    r = recommend(p, None, 1000, days, 28.0)
    assert r.verdict == verdict
    assert r.feasible is (None if days is None else days <= 28.0)


def test_traffic_given_median_unknown() -> None:
    assert traffic("ctr", 500.0, [("a", 1.0), ("b", 2.0)]).users_per_day == 500.0
    t = traffic("ctr", None, [("a", 3000.0), ("b", 100.0), ("c", 800.0), ("d", 90.0)])
    assert (t.source, t.users_per_day, t.experiments) == ("median_of_experiments", 450.0, 4)
    assert t.names == ("a", "b", "c", "d")
    assert traffic("ctr", None, []).source == "unknown"


def test_a_passed_over_best_is_named_with_the_reason(
    store: tuple[str, dict[str, float]],
) -> None:
    """The choice of the board's second signal says the first and why it was not used."""
    from abeval.analysis.agreement import AgreementOptions
    from abeval.analysis.agreement_board import agreement_board
    from abeval.analysis.forecast_choice import best_on_board, board_key, signal_choice

    db, _ = store
    with open_store(db, read_only=True) as s:
        rows = agreement_board(s, AgreementOptions(primary=("ctr",))).summary
    best = best_on_board(rows, "ctr")
    assert best is not None and board_key(best) == "ndcg@10"
    second = next(r for r in rows if r.online_metric == "ctr" and r.rank == 2)
    choice = signal_choice(board_key(second), False, rows, "ctr", "no_lift")
    assert (choice.reason, choice.best, choice.passed_over) == (
        "next_on_board", "ndcg@10", "no_lift",
    )  # fmt: skip
    assert choice.rank == 2 and choice.spearman == second.spearman
    kept = signal_choice("ndcg@10", False, rows, "ctr", None)
    assert (kept.reason, kept.best, kept.passed_over) == ("best_on_board", None, None)


def test_the_go_no_go_numbers_from_their_definitions(tmp_path: Path) -> None:
    """P(lift > 0) and P(lift > MDE) of the go / no-go line are the forecast's
    normal mixture's tails (scipy), and its users the fewest (even) whose test
    reaches 80% assurance at the α the decision uses, read once a day, re-derived by
    a numpy simulation of the daily looks against the spending boundaries."""
    import numpy as np
    from history_files import _rows, _write
    from scipy.stats import norm

    from abeval.api import forecast_evidence, forecast_history

    history = _write(tmp_path / "h.csv", _rows())
    evidence = forecast_evidence(offline_lift=0.031, offline_se=0.008)
    report = forecast_history(history, evidence, users_per_day=20_000, max_days=60)
    m = report.forecasts[0]
    f, r = m.forecast, m.recommendation
    assert r is not None and m.lift_se_per_sqrt_user is not None and r.users is not None
    w, mean, sd = (np.array(v) for v in (f.weights, f.means, f.sds))
    assert r.p_positive == pytest.approx(float(np.sum(w * norm.sf(0.0, mean, sd))), rel=1e-9)
    assert r.p_above_mde == pytest.approx(float(np.sum(w * norm.sf(0.02, mean, sd))), rel=1e-9)

    # at α over the two default primary metrics (0.025), read once a day up to the
    # users (m.assurance.looks of them): a numpy simulation of the daily z statistics,
    # the true lift drawn from the forecast's mixture, crossing the upper boundary
    from abeval.stats.spending import spending_boundaries
    from abeval.stats.spending_power import daily_fractions

    a = m.assurance
    assert a is not None and a.alpha == pytest.approx(0.025)
    assert a.looks == min(56, int(np.ceil(r.users / 20_000)))
    t = np.array(daily_fractions(a.looks))
    c = np.array(spending_boundaries(tuple(t), 0.025))
    rng = np.random.default_rng(5)
    runs = 100_000
    se = m.lift_se_per_sqrt_user / np.sqrt(r.users)
    pick = rng.choice(len(w), runs, p=w / w.sum())
    lam = rng.normal(mean[pick], sd[pick]) / se
    steps = rng.normal(0.0, 1.0, (runs, len(t))) * np.sqrt(np.diff(t, prepend=0.0))
    z = (np.cumsum(steps, axis=1) + lam[:, None] * t) / np.sqrt(t)
    up, down = z >= c, z <= -c
    first_up = np.where(up.any(axis=1), up.argmax(axis=1), len(t))
    first_down = np.where(down.any(axis=1), down.argmax(axis=1), len(t))
    shipped = float(np.mean(first_up < first_down))
    assert shipped == pytest.approx(0.8, abs=4 * np.sqrt(0.16 / runs) + 2e-3)
    # the fixed test of as many users at 0.025 would promise more
    z_fixed = norm.isf(0.0125)
    fixed = float(np.sum(w * norm.cdf((mean - z_fixed * se) / np.sqrt(se**2 + sd**2))))
    assert fixed > 0.8
    assert r.days == pytest.approx(r.users / 20_000)
    assert r.verdict == ("go" if r.p_positive >= 0.8 and r.days <= 60 else "test_if_cheap")
