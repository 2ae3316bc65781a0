"""``abeval forecast`` on the store's history: the signal is the one the
agreement board ranks first, every experiment with that signal enters once, and
the numbers are the model's on the board's pairs (tests/agreement_store.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import RECORDED, build_store, evaluation
from ingest_store import run

from abeval.analysis.agreement import AgreementOptions, agreement_board
from abeval.stats.distributions import norm_isf
from abeval.stats.forecast import HistoryRow, fit, predict
from abeval.store import open_store
from abeval.store.evaluations import record_evaluation


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The agreement board's store, with a recorded ndcg@10 for exp-c too: four
    experiments with a recorded signal."""
    db = build_store(tmp_path_factory.mktemp("forecast-store"))
    RECORDED["exp-c"] = (0.20, 0.012, 0.004)
    try:
        with open_store(db) as store:
            record_evaluation(store, evaluation("exp-c"))
    finally:
        del RECORDED["exp-c"]
    return db


def test_forecast_from_the_store_uses_the_board_s_best_signal(db: str) -> None:
    result = run(
        "forecast", "--db", db, "--offline-lift", "0.03", "--offline-se", "0.005",
        "--primary", "ctr", "-f", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    f = json.loads(result.stdout)["forecast"]
    with open_store(db, read_only=True) as store:
        board = agreement_board(store, AgreementOptions(primary=("ctr",)))
    best = next(s for s in board.summary if s.online_metric == "ctr" and s.rank == 1)
    assert best.source != "replay"  # the board ranks independent signals first
    assert f["signal"] == best.signal and f["metric"] == "ctr"
    pairs = [
        p for p in board.pairs
        if (p.signal, p.source) == (best.signal, best.source)
        and p.online_metric == "ctr"
        and p.offline_ci is not None
    ]  # fmt: skip
    z = norm_isf(0.025)
    rows = [
        HistoryRow(
            p.offline_lift or 0.0,
            (p.offline_ci[1] - p.offline_ci[0]) / (2 * z),  # type: ignore[index]
            p.online_lift,
            p.online_se or 0.0,
        )
        for p in pairs
    ]
    assert f["k"] == len({p.experiment for p in pairs}) == len(rows)
    expected = predict(fit(rows), 0.03, 0.005, mde=0.02)
    assert f["lift"] == pytest.approx(expected.point, rel=1e-9)
    assert f["interval"] == pytest.approx(list(expected.interval or ()), rel=1e-9)
    # the tests' sizes are known from the store: the test size is planned
    assert f["lift_se_per_sqrt_user"] is not None and f["users_per_day"] is not None
    a = f["assurance"]
    if a["status"] == "ok":
        assert f["days"] == pytest.approx(f["users"] / f["users_per_day"])
    else:  # four small experiments: the forecast is too wide for 80%
        assert a["status"] == "unreachable" and f["users"] is None
        assert a["ceiling"] == pytest.approx(f["p_positive"]) and a["ceiling"] < 0.8


def test_an_unknown_signal_lists_the_store_s(db: str) -> None:
    result = run("forecast", "--db", db, "--offline-lift", "0.03", "--offline-se", "0.005",
                 "--primary", "ctr", "--signal", "ndcg@20")  # fmt: skip
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert line.startswith(f"Error: --signal ndcg@20: the store {Path(db)} has no such signal; "
                           "it has ndcg@10, ")  # fmt: skip
