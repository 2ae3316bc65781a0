"""``abeval forecast`` on the store's history: the signal is the one the
agreement board ranks first, every experiment with that signal enters once, and
the numbers are the model's on the board's pairs (tests/agreement_store.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import RECORDED, build_store, evaluation
from ingest_store import run

from abeval.analysis.agreement import AgreementOptions
from abeval.analysis.agreement_board import agreement_board
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


def _snips_by_hand(events: Path, candidate: Path) -> tuple[float, float]:
    """SNIPS's lift of the candidate over the control's observed CTR, written out
    with pandas: w = π_candidate / propensity per control impression, clicked
    when a click names its request and item; lift = (Σwc/Σw) / (Σc/Σn) − 1, its
    standard error by the delta method over per-user sums (sample covariance)."""
    import numpy as np
    import pandas as pd

    ev = pd.read_csv(events)
    imp = ev[(ev.event_type == "impression") & (ev.arm == "control") & ev.propensity.notna()]
    clicks = ev[ev.event_type == "click"][["request_id", "item_id"]].drop_duplicates()
    imp = imp.merge(clicks.assign(c=1.0), on=["request_id", "item_id"], how="left")
    m = imp.fillna({"c": 0.0}).merge(
        pd.read_csv(candidate), on=["request_id", "item_id", "position"], how="left"
    )
    m["w"] = m.probability.fillna(0.0) / m.propensity
    m["wc"] = m.w * m.c
    m["n"] = 1.0
    users = m.groupby("user_id")[["wc", "w", "c", "n"]].sum().to_numpy()
    a, b, c, d = users.mean(axis=0)
    grad = np.array([d / (b * c), -a * d / (b * b * c), -a * d / (b * c * c), a / (b * c)])
    se = float(np.sqrt(grad @ np.cov(users.T, ddof=1) @ grad / len(users)))
    return (a / b) / (c / d) - 1.0, se


def test_off_policy_evidence_is_snips_from_production_logs(db: str, tmp_path: Path) -> None:
    """``--target-propensities FILE --experiment NAME``: a candidate that puts
    more weight on position 1 than exp-b's policy; its lift is the headline
    estimator's (SNIPS without step probabilities) from exp-b's control logs,
    checked against pandas, and the forecast is the model's on the history of
    SNIPS predictions (each past experiment's own target file)."""
    import pandas as pd

    folder = Path(db).parent
    rows = pd.read_csv(folder / "exp-b.target.csv")
    rows["probability"] = [0.3 if p == 1 else 0.05 for p in rows.position]
    candidate = tmp_path / "candidate.csv"
    rows.to_csv(candidate, index=False)
    result = run("forecast", "--db", db, "--target-propensities", str(candidate),
                 "--experiment", "exp-b", "--primary", "ctr", "-f", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    f = json.loads(result.stdout)["forecast"]
    lift, se = _snips_by_hand(folder / "exp-b.csv", candidate)
    assert lift > 0.1  # the candidate differs from production
    assert f["signal"] == "snips"
    assert f["offline_lift"] == pytest.approx(lift, rel=1e-9)
    assert f["offline_se"] == pytest.approx(se, rel=1e-9)
    with open_store(db, read_only=True) as store:
        board = agreement_board(store, AgreementOptions(primary=("ctr",)))
    pairs = [p for p in board.pairs
             if p.signal == "snips" and p.source == "ope" and p.online_metric == "ctr"
             and p.independent and p.offline_ci is not None]  # fmt: skip
    z = norm_isf(0.025)
    history = [HistoryRow(p.offline_lift or 0.0,
                          (p.offline_ci[1] - p.offline_ci[0]) / (2 * z),  # type: ignore[index]
                          p.online_lift, p.online_se or 0.0)
               for p in pairs]  # fmt: skip
    expected = predict(fit(history), lift, se, mde=0.02)
    assert f["k"] == len(history) == 4
    assert f["lift"] == pytest.approx(expected.point, rel=1e-6)
    assert f["interval"] == pytest.approx(list(expected.interval or ()), rel=1e-6)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--experiment", "exp-b"],
         "Error: --target-propensities: give the candidate's "
         "probabilities with --experiment"),
        (["--target-propensities", "{targets}"],
         "Error: --experiment: name the stored experiment whose production "
         "logs --target-propensities reweights"),
        (["--target-propensities", "{targets}", "--experiment", "exp-bb"],
         "Error: --experiment exp-bb: no such experiment in the store; did you mean exp-b"),
        (["--target-propensities", "{targets}", "--experiment", "exp-a"],
         "Error: {targets}: gives the logged item of"),
        (["--target-propensities", "{targets}", "--experiment", "exp-b",
          "--offline-lift", "0.1", "--offline-se", "0.01"],
         "Error: --offline-lift: give the candidate's offline evidence once"),
    ],
)  # fmt: skip
def test_off_policy_evidence_refuses_bad_options(db: str, args: list[str], line: str) -> None:
    targets = str(Path(db).parent / "exp-b.target.csv")
    result = run("forecast", "--db", db, "--primary", "ctr",
                 *[a.format(targets=targets) for a in args])  # fmt: skip
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1].startswith(line.format(targets=targets))


def test_a_board_already_built_is_read_not_built_again(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build_forecast(..., board)``: the board ``abeval agreement`` builds (every
    primary metric) gives the forecast the store's own build gives for ctr, and
    no second board is built."""
    import abeval.analysis.agreement_board as board_module
    from abeval.analysis.forecast import ForecastOptions, build_forecast
    from abeval.analysis.forecast_candidate import typed_evidence

    evidence = typed_evidence(0.03, 0.005)
    options = ForecastOptions(primary=("ctr",))
    with open_store(db, read_only=True) as store:
        fresh = build_forecast(store, evidence, options)
        board = agreement_board(store, AgreementOptions())
        assert {p.online_metric for p in board.pairs} > {"ctr"}

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("the board was built again")

        monkeypatch.setattr(board_module, "agreement_board", refuse)
        reused = build_forecast(store, evidence, options, board)
    assert [(f.metric, f.signal, f.experiments) for f in reused.forecasts] == [
        (f.metric, f.signal, f.experiments) for f in fresh.forecasts
    ]
    # equal up to the order the pairs are summed in
    new, old = reused.forecasts[0].forecast, fresh.forecasts[0].forecast
    assert new.point == pytest.approx(old.point, rel=1e-12)
    assert new.interval == pytest.approx(old.interval, rel=1e-12)
