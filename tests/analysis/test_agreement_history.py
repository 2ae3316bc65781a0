"""``abeval agreement --history FILE`` and ``--backtest``: the board over a history
file, its JSON (the schema, the noise-aware keys, the backtest against a refit
written here), the text's lines, and bad options as one line each."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from html_tree import parse
from ingest_store import run
from scipy import stats as st
from test_forecast_cli import _write

from abeval.stats.forecast import HistoryRow, fit, predict

K = 9


def _rows(seed: int = 5) -> list[dict[str, object]]:
    """Two signals over K experiments (dates out of file order): ``good`` tracks the
    true lift, ``noise`` does not."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(K):
        theta = float(rng.normal(0.005, 0.02))
        se = float(rng.uniform(0.005, 0.01))
        y = theta + float(rng.normal(0, se))
        date = f"2026-0{1 + (i * 4) % K}-01"  # a permutation of the months
        for signal, x in (("good", theta + float(rng.normal(0, 0.003))),
                          ("noise", float(rng.normal(0, 0.02)))):  # fmt: skip
            out.append({"experiment": f"exp-{i}", "signal": signal, "offline_lift": x,
                        "offline_se": 0.003, "online_lift": y, "online_se": se,
                        "metric": "ctr", "arm": "b", "date": date})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("history") / "history.csv", _rows())


@pytest.fixture(scope="module")
def doc(history: Path) -> dict:
    result = run("agreement", "--history", str(history), "--backtest", "-f", "json",
                 "--resamples", "200")  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_history_json_follows_the_schema(doc: dict) -> None:
    schema = json.loads(
        (Path(__file__).parents[2] / "reports" / "agreement.schema.json").read_text()
    )
    jsonschema.validate(doc, schema)
    assert doc["store"].startswith("history file ")
    assert [e["experiment"] for e in doc["experiments"]][:3] == ["exp-0", "exp-7", "exp-5"]
    assert {p["source"] for p in doc["pairs"]} == {"history"}
    assert len(doc["pairs"]) == 2 * K  # every row read is a pair


def test_history_rows_carry_the_noise_aware_keys(doc: dict) -> None:
    rows = {r["signal"]: r for r in doc["summary"]}
    good, noise = rows["good"], rows["noise"]
    assert good["rank"] == 1 and noise["rank"] == 2  # the signal that predicts first
    assert good["predictive_gain"] > 0 > noise["predictive_gain"]
    for r in (good, noise):
        assert r["ceiling_status"] == "ok"
        assert r["rho_over_ceiling"] == pytest.approx(r["spearman"] / r["ceiling"])
        assert 0 <= r["reliability"] <= 1 and 0 < r["familywise_p"] <= 1
    # Spearman over the file's rows, by scipy.
    x = [float(p["offline_lift"]) for p in _rows() if p["signal"] == "good"]
    y = [float(p["online_lift"]) for p in _rows() if p["signal"] == "good"]
    assert good["spearman"] == pytest.approx(st.spearmanr(x, y).statistic)


def test_backtest_orders_by_date_and_refits_on_the_earlier_experiments(doc: dict) -> None:
    bt = next(b for b in doc["backtest"] if b["signal"] == "good")
    assert bt["ordered_by"] == "date"
    result = bt["result"]
    rows = [r for r in _rows() if r["signal"] == "good"]
    order = sorted(rows, key=lambda r: r["date"])
    assert result["skipped"] == 3 and result["forecast"] == K - 3
    for step, i in zip(result["steps"], range(3, K), strict=True):
        target = order[i]
        earlier = [HistoryRow(float(r["offline_lift"]), 0.003, float(r["online_lift"]),
                              float(r["online_se"]), str(r["experiment"]))
                   for r in order[:i]]  # fmt: skip
        f = predict(fit(earlier), float(target["offline_lift"]), 0.003)
        assert step["experiment"] == target["experiment"] and step["history"] == i
        assert step["point"] == pytest.approx(f.point, rel=1e-9)
        assert step["p_positive"] == pytest.approx(f.p_positive, rel=1e-9)
    steps = result["steps"]
    assert result["coverage"] == pytest.approx(np.mean([s["covered"] for s in steps]))
    assert result["kept"] == sum(s["p_positive"] > 0.5 for s in steps)


def test_text_backtest_lines(history: Path) -> None:
    result = run("agreement", "--history", str(history), "--backtest", "-f", "text",
                 "--resamples", "200")  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"{K} experiments: {K} with offline signals, 0 without, 0 skipped" in lines
    head = lines.index(next(x for x in lines if x.startswith("Backtest: ")))
    assert "ordered by the history's date" in lines[head]
    body = [x.split() for x in lines[head + 2 : head + 4]]
    assert [b[0] for b in body] == ["good", "noise"]
    assert [b[3:5] for b in body] == [[str(K - 3), "3"], [str(K - 3), "3"]]
    assert any(
        x.split()[:4] == ["signal", "source", "LOO", "gain"] and "ceiling" in x for x in lines
    )


def test_without_backtest_there_is_none(history: Path) -> None:
    result = run("agreement", "--history", str(history), "-f", "json", "--resamples", "200")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["backtest"] == []


def test_history_html(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "board.html"
    result = run("agreement", "--history", str(history), "--backtest", "-o", str(out),
                 "--resamples", "200")  # fmt: skip
    assert result.exit_code == 0, result.output
    page = parse(out.read_text())
    table = page.find("table", class_="backtest")
    rows = table.find_all("tr", data_source="history")
    assert [r.attrs["data-signal"] for r in rows] == ["good", "noise"]
    assert page.find("td", data_field="ceiling") is not None
    assert page.find("li", data_legend="fit") is not None


def test_rows_without_a_date_keep_file_order(tmp_path: Path) -> None:
    rows = _rows()
    for r in rows:
        r["date"] = ""
    path = _write(tmp_path / "nodate.csv", rows)
    result = run("agreement", "--history", str(path), "--backtest", "-f", "json",
                 "--resamples", "200")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {b["ordered_by"] for b in doc["backtest"]} == {"row"}
    assert [e["experiment"] for e in doc["experiments"]] == [f"exp-{i}" for i in range(K)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--experiments", "a"], "--experiments: a history file has no "
                                 "store to pick from"),
        (["--db", "x.duckdb"], "--db: give either --history or --db"),
        (["--target-propensities", "a=t.csv"], "--target-propensities: a "
                                               "history file already holds its offline lifts"),
    ],
)  # fmt: skip
def test_options_that_need_a_store(history: Path, args: list[str], message: str) -> None:
    result = run("agreement", "--history", str(history), *args)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
    assert result.stdout == ""


def test_a_row_without_a_standard_error_is_one_line(tmp_path: Path) -> None:
    rows = _rows()
    rows[3]["online_se"] = ""
    path = _write(tmp_path / "bad.csv", rows)
    out = tmp_path / "board.json"
    result = run("agreement", "--history", str(path), "-f", "json", "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: row 4: no online_se; give the online lift's standard error (above 0)\n"
    )
    assert not out.exists()


def test_a_metric_the_file_lacks(history: Path) -> None:
    result = run("agreement", "--history", str(history), "--primary", "revenue")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {history}: no row of the metric revenue; the file has ctr (choose with "
        "--primary)\n"
    )


def test_the_python_api_reads_a_history(history: Path) -> None:
    from abeval import api
    from abeval.errors import OptionError

    board = api.agreement_history(history, resamples=200, backtest=True)
    assert [s.signal for s in board.summary] == ["good", "noise"]
    assert {b.signal for b in board.backtest} == {"good", "noise"}
    assert api.agreement_history(history, resamples=200, primary="ctr").backtest == ()
    with pytest.raises(OptionError) as raised:
        api.agreement_history(history, alpha=2.0)
    assert raised.value.parameter == "alpha"
