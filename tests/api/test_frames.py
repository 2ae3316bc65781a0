"""Results as tables (docs/python.md#dataframes): every cell of ``to_frame()`` is
the number of the result's JSON document at the path its column names, each
result's ``repr`` is a few lines that say how to see more, the notebook's HTML is
a bare table, and without pandas ``to_frame()`` says in one line what to install."""

from __future__ import annotations

import csv
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from agreement_store import build_store
from ingest_store import simulated_store

import abeval
from abeval import api, render
from abeval.errors import AbevalError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("frames")
    db = simulated_store(folder, users=400, seed=3)
    history = build_store(folder, users=300)
    truth = folder / "truth.csv"
    truth.write_text("user_id,item_id,relevance\nu1,a,1\nu1,c,2\nu2,b,1\nu3,a,1\n")
    base = folder / "base.csv"
    base.write_text("user_id,item_id,score\nu1,a,.9\nu1,b,.8\nu1,c,.1\nu2,a,.5\nu2,b,.4\nu3,c,1\n")
    new = folder / "new.csv"
    new.write_text("user_id,item_id,score\nu1,c,.9\nu1,b,.8\nu2,b,.5\nu2,a,.4\nu3,a,1\n")
    per_user = folder / "per_user.csv"
    found: dict[str, Any] = {}
    with abeval.open(db, read_only=True) as store:
        found["report"] = store.report("home-reco-v2")
        found["experiments"] = store.experiments()
    with abeval.open(history, read_only=True) as store:
        found["board"] = store.agreement(resamples=200, seed=1)
        evidence = api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
        found["forecast"] = store.forecast(evidence)
    found["evaluation"] = abeval.evaluate(
        truth, {"base": base, "new": new}, k=[2], seed=1, resamples=200, per_user=str(per_user)
    )
    return found


def _same(cell: Any, value: Any, where: str) -> None:
    """A frame's cell against the JSON's value (pandas shows a missing number as NaN)."""
    if value is None:
        assert cell is None or (isinstance(cell, float) and math.isnan(cell)), where
    else:
        assert cell == value, where


def _check(frame: Any, expected: list[dict[str, Any]]) -> None:
    assert len(frame) == len(expected)
    for i, row in enumerate(expected):
        assert set(row) <= set(frame.columns), set(row) - set(frame.columns)
        for column, value in row.items():
            _same(frame.iloc[i][column], value, f"row {i} {column}")


def test_report_frame_is_one_row_per_metric_and_arm_with_the_decision_s_interval(
    results: dict[str, Any],
) -> None:
    report = results["report"]
    document = report.to_dict()
    read = {}
    for d in document["decisions"]:
        for i in d["primaries"] + d["guardrails"]:
            read[d["arm"], i["metric"]] = i["interval"]
    expected = []
    for m in document["metrics"]:
        rel = m["comparison"]["relative"]
        shown = rel["ci_adjusted"] if rel["alpha_adjusted"] is not None else rel["ci"]
        low, high = read.get((m["arm"], m["metric"]), shown) or (None, None)
        expected.append(
            {
                "metric": m["metric"],
                "arm": m["arm"],
                "role": m["role"],
                "control.value": m["control"]["value"],
                "treatment.value": m["treatment"]["value"],
                "relative_effect": rel["effect"],
                "interval_low": low,
                "interval_high": high,
                "p_value": rel["p_value"],
                "p_adjusted": rel["p_adjusted"],
                "significant": m["significant"],
                "chance_to_win": m["bayesian"]["relative"]["chance_to_win"],
            }
        )
    frame = report.to_frame()
    _check(frame, expected)
    # The primaries are read under the sequential basis here (no plan recorded):
    # their interval is the group-sequential one, wider than the fixed-horizon one
    # (unbounded this early: 400 users of the expected ~400,000 spend next to no α).
    ctr = frame[frame.metric == "ctr"].iloc[0]
    fixed = next(m for m in document["metrics"] if m["metric"] == "ctr")
    assert ctr["basis"] == "group_sequential"
    reference = fixed["reference_fixed_horizon"]["relative"]
    low = ctr["interval_low"]
    assert low is None or low != low or low < reference["ci_adjusted"][0]  # unbounded


def test_evaluation_frame_per_metric_and_per_user(results: dict[str, Any]) -> None:
    evaluation = results["evaluation"]
    document = evaluation.to_dict()
    paired = {(c["model"], c["metric"]): c for c in document["comparisons"]}
    expected = []
    for m in document["metrics"]:
        c = paired.get((m["group"], m["metric"]), {})
        expected.append(
            {"model": m["group"], "metric": m["metric"], "value": m["value"]}
            | {"std_error": m["std_error"], "users": m["users"]}
            | {"difference": c.get("difference"), "ci_low": c.get("ci_low")}
            | {"ci_high": c.get("ci_high"), "p_t_holm": c.get("p_t_holm")}
        )
    _check(evaluation.to_frame(), expected)
    assert len(expected) == 2 * 7  # two models, seven metrics at k = 2
    with Path(document["per_user_path"]).open() as f:
        rows = list(csv.DictReader(f))
    per_user = evaluation.to_frame(per_user=True)
    assert list(per_user.columns) == list(rows[0])
    _check(
        per_user,
        [{k: (v if k in ("model", "user_id") else float(v)) for k, v in r.items()} for r in rows],
    )
    # u1's relevant items a (relevance 1) and c (2), linear gain: "new" ranks c, b,
    # so DCG = 2 against the ideal 2 + 1/log2(3).
    u1 = per_user[(per_user.model == "new") & (per_user.user_id == "u1")].iloc[0]
    assert u1["ndcg@2"] == pytest.approx(2 / (2 + 1 / math.log2(3)))


def _flat(entry: dict[str, Any]) -> dict[str, Any]:
    row = {}
    for key, value in entry.items():
        if key == "interval" or key.endswith(("_ci", "_interval")):
            row[f"{key}_low"], row[f"{key}_high"] = value if value is not None else (None, None)
        elif not isinstance(value, list | dict):
            row[key] = value
    return row


def test_board_frame_is_one_row_per_signal_and_metric(results: dict[str, Any]) -> None:
    board = results["board"]
    summary = board.to_dict()["summary"]
    frame = board.to_frame()
    _check(frame, [_flat(s) for s in summary])
    assert not [c for c in frame.columns if c.endswith("_ci")]
    pairs = {(s["signal"], s["source"], s["online_metric"]) for s in summary}
    assert len(pairs) == len(frame) > 10


def test_forecast_frame_is_one_row_per_metric(results: dict[str, Any]) -> None:
    forecast = results["forecast"]
    document = render.json_document(forecast)
    expected = [
        _flat(f) | {"assurance.status": f["assurance"]["status"]} for f in document["forecasts"]
    ]
    frame = forecast.to_frame()
    _check(frame, expected)
    assert list(frame.metric) == ["ctr", "conversion"]


def test_experiments_frame_is_one_row_per_experiment_and_arm(results: dict[str, Any]) -> None:
    (only,) = [e.to_dict() for e in results["experiments"]]
    expected = [
        {"experiment": only["experiment"], "arm": a["arm"], "users": a["users"]}
        | {f"events.{t}": n for t, n in a["events"].items()}
        | {"first_ts": only["first_ts"], "last_ts": only["last_ts"]}
        for a in only["arms"]
    ]
    frame = results["experiments"].to_frame()
    _check(frame, expected)
    assert frame["users"].sum() == 400


@pytest.mark.parametrize("name", ["report", "board", "forecast", "evaluation"])
def test_the_shown_result_is_the_result(results: dict[str, Any], name: str) -> None:
    """The API's result has the fields and the JSON of the type it derives from."""
    shown = results[name]
    (base,) = type(shown).__bases__[1:]
    plain = base(**{f.name: getattr(shown, f.name) for f in dataclasses.fields(base)})
    assert [f.name for f in dataclasses.fields(shown)] == [f.name for f in dataclasses.fields(base)]
    assert shown.to_dict() == plain.to_dict()
    assert "SHOWN" not in shown.to_dict()


@pytest.mark.parametrize("name", ["report", "board", "forecast", "evaluation", "experiments"])
def test_repr_is_short_and_says_how_to_see_more(results: dict[str, Any], name: str) -> None:
    shown = repr(results[name])
    assert len(shown.splitlines()) < 20
    assert len(shown) < 400
    assert ".to_frame()" in shown and ".to_dict()" in shown


def test_report_repr_names_its_decision(results: dict[str, Any]) -> None:
    report = results["report"]
    first = report.decisions[0]
    assert repr(report).startswith(
        f"<ExperimentReport 'home-reco-v2': treatment: {first.decision} (CTR "
    )
    assert "7 metrics × 1 treatment arm" in repr(report)


@pytest.mark.parametrize("name", ["report", "board", "forecast", "evaluation"])
def test_notebook_html_is_a_bare_table(results: dict[str, Any], name: str) -> None:
    page = results[name]._repr_html_()
    assert "<table>" in page and "<style" not in page and "<html" not in page.lower()
    assert page.count("<tr>") == 1 + len(results[name].to_frame())
    assert "to_frame()" in page


def test_report_html_escapes_and_shows_the_chance_to_win(results: dict[str, Any]) -> None:
    page = results["report"]._repr_html_()
    assert "<th>chance_to_win</th>" in page
    chance = results["report"].to_frame().chance_to_win.iloc[0]
    assert f"<td>{chance:.0%}</td>" in page


def test_without_pandas_to_frame_says_what_to_install(
    results: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    for name in ("report", "board", "forecast", "evaluation", "experiments"):
        with pytest.raises(AbevalError) as caught:
            results[name].to_frame()
        assert str(caught.value) == "to_frame() needs pandas: pip install 'abeval[pandas]'"
