"""``abeval forecast``: options, exit codes, exact messages, a history file read
back (CSV and Parquet) into the same numbers the model gives on its rows, the
arms of one experiment entering once, the three formats, the candidate's
evaluation run by the command, and the store's board choosing the signal."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from history_files import _rows, _write
from html_tree import parse
from ingest_store import run

from abeval.stats.assurance import assurance
from abeval.stats.forecast import HistoryRow, fit, predict
from abeval.stats.spending_power import planned_looks

COLUMNS = ["experiment", "signal", "offline_lift", "offline_se", "online_lift", "online_se"]


def _history_rows(rows: list[dict[str, object]]) -> list[HistoryRow]:
    return [
        HistoryRow(
            float(r["offline_lift"]),  # type: ignore[arg-type]
            float(r["offline_se"]),  # type: ignore[arg-type]
            float(r["online_lift"]),  # type: ignore[arg-type]
            float(r["online_se"]),  # type: ignore[arg-type]
        )
        for r in rows
    ]


TYPED = ["--offline-lift", "0.031", "--offline-se", "0.008"]
ONCE = (
    "give the candidate's offline evidence once: --offline-lift and --offline-se, "
    "or --truth and two --recommendations, or --target-propensities and --experiment"
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], f"--offline-lift: {ONCE}"),
        (["--offline-lift", "0.03"], "--offline-se: needed with --offline-lift: an "
                                     "offline lift and its standard error go together"),
        ([*TYPED, "-t", "truth.csv"], f"--offline-lift: {ONCE}"),
        ([*TYPED, "--alpha", "1.5"], "--alpha 1.5: must be between 0 and 1 "
                                     "(exclusive)"),
        ([*TYPED, "--users-per-day", "-3"], "--users-per-day -3: must be a "
                                            "number above 0"),
        (["--offline-lift", "0.03", "--offline-se", "-1"], "--offline-se -1: give a "
                                                           "standard error, 0 or more"),
        (["-t", "truth.csv", "-r", "a=h.csv"], "--recommendations: 1 run(s) given; give "
                                               "two: production's (named control) and the "
                                               "candidate's"),
    ],
)  # fmt: skip
def test_bad_options_are_usage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    history = _write(tmp_path / "h.csv", _rows())
    result = run("forecast", "--history", str(history), *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
    assert result.stdout == ""


def _error(tmp_path: Path, rows: list[dict[str, object]], *args: str) -> tuple[int, str, str]:
    history = _write(tmp_path / "h.csv", rows)
    result = run("forecast", "--history", str(history), *TYPED, *args)
    assert result.stdout == ""
    return result.exit_code, result.stderr.strip(), str(history)


def test_too_few_experiments_says_how_many_are_needed(tmp_path: Path) -> None:
    code, line, path = _error(tmp_path, _rows(k=2))
    assert code == 1
    assert line == (
        f"Error: {path}: 2 past experiments with ndcg@10 and ctr; the forecast needs 3 or more"
    )


def test_arms_of_one_experiment_count_once(tmp_path: Path) -> None:
    rows = _rows(k=2)
    rows.append({**rows[0], "offline_lift": 0.05})  # a second arm of exp-00
    _, line, _ = _error(tmp_path, rows)
    assert line.endswith("2 past experiments with ndcg@10 and ctr; the forecast needs 3 or more")


def test_an_unknown_signal_lists_the_history_s_closest_first(tmp_path: Path) -> None:
    rows = _rows(k=3)
    rows[1]["signal"] = "recall@10"
    rows[2]["signal"] = "ndcg@5"
    code, line, path = _error(tmp_path, rows, "--signal", "ndcg@20")
    assert code == 1
    assert line == (
        f"Error: --signal ndcg@20: {path} has no such signal; it has ndcg@10, ndcg@5, recall@10"
    )


def test_several_signals_in_a_file_need_signal(tmp_path: Path) -> None:
    rows = _rows(k=6)
    for r in rows[3:]:
        r["signal"] = "recall@10"
    code, line, path = _error(tmp_path, rows)
    assert code == 1
    assert line == (
        f"Error: {path} has several signals for ctr (ndcg@10, recall@10); name one with --signal"
    )


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("online_se", "", "row 3: no online_se; give the online lift's standard error (above 0)"),
        ("offline_se", "", "row 3: no offline_se; give the offline lift's standard error "
                           "(0 when it has no noise)"),
        ("online_se", "0", "row 3: online_se is not above 0; give the online lift's standard "
                           "error (above 0)"),
        ("offline_lift", "abc", "row 3: offline_lift is 'abc', not a number; give the signal's "
                                "relative lift of the tested arm over control"),
        ("experiment", "", "row 3: no experiment; give every row its experiment"),
    ],
)  # fmt: skip
def test_a_bad_row_names_file_row_and_fix(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    rows = _rows()
    rows[2][column] = value
    code, line, path = _error(tmp_path, rows)
    assert code == 1
    assert line == f"Error: {path}: {message}"


def test_a_missing_column_lists_the_columns(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "online_se"} for r in _rows()]
    code, line, path = _error(tmp_path, rows)
    assert code == 1
    assert line == (
        f"Error: {path}: no column online_se; a history needs the columns experiment, signal, "
        "offline_lift, offline_se, online_lift, online_se (optional: metric, arm, date, users)"
    )


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    result = run("forecast", "--history", str(tmp_path / "none.csv"), *TYPED)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {tmp_path / 'none.csv'}: no such file; give --history a CSV or Parquet file"
    )


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_history_round_trip_gives_the_model_s_numbers(tmp_path: Path, kind: str) -> None:
    rows = _rows()
    if kind == "csv":
        history = _write(tmp_path / "h.csv", rows)
    else:
        history = tmp_path / "h.parquet"
        pq.write_table(pa.Table.from_pylist(rows), history)
    result = run(
        "forecast", "--history", str(history), *TYPED, "--users-per-day", "20000",
        "--mde", "0.02", "-f", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    f = doc["forecast"]
    assert [m["metric"] for m in doc["forecasts"]] == ["ctr"]
    fitted = fit(_history_rows(rows))
    expected = predict(fitted, 0.031, 0.008, mde=0.02)
    assert f["signal"] == "ndcg@10" and f["metric"] == "ctr" and f["k"] == 10
    assert f["lift"] == pytest.approx(expected.point, rel=1e-12)
    assert f["interval"] == pytest.approx(list(expected.interval or ()), rel=1e-12)
    assert f["p_positive"] == pytest.approx(expected.p_positive, rel=1e-12)
    assert f["p_above_mde"] == pytest.approx(expected.p_above_mde, rel=1e-12)
    assert f["slope"] == pytest.approx(fitted.slope, rel=1e-12)
    assert f["tau"] == pytest.approx(fitted.tau, abs=1e-15)
    # the test's size: assurance just reaches 80% at the users given, with the
    # lift's se per √user the median of se · √users over the history
    scale = statistics.median(float(r["online_se"]) * 200_000**0.5 for r in rows)  # type: ignore[arg-type]
    assert f["lift_se_per_sqrt_user"] == pytest.approx(scale)
    users = f["users"]

    # at α over the two default primary metrics, read once a day up to the users
    def reached(n: float) -> float:
        return assurance(expected, n, scale, 0.025, planned_looks(n, 20_000))

    assert reached(users) >= 0.8 > reached(users * 0.99)
    assert f["days"] == pytest.approx(users / 20000)


def test_text_and_html_say_the_same(tmp_path: Path) -> None:
    rows = _rows()
    history = _write(tmp_path / "h.csv", rows)
    text = run("forecast", "--history", str(history), *TYPED, "--users-per-day", "20000")
    assert text.exit_code == 0, text.output
    expected = predict(fit(_history_rows(rows)), 0.031, 0.008, mde=0.02)
    assert expected.interval is not None
    lines = text.stdout.splitlines()
    assert lines[4] == "ctr, from ndcg@10: the history's only signal for ctr"
    assert lines[5].startswith(("  Go: test it. ", "  Test if cheap: ", "  No-go: "))
    lift, (low, high) = expected.point or 0.0, expected.interval
    assert lines[6] == (
        f"  offline lift +3.10% (se 0.80%) → online lift {lift * 100:+.2f}%, 95% prediction "
        f"interval [{low * 100:+.2f}%, {high * 100:+.2f}%]"
    )
    assert lines[8].startswith("  Learned from 10 experiments: slope ")
    assert lines[10] == "  Traffic: 20,000 users a day (given with --users-per-day)"
    out = tmp_path / "f.html"
    page = run("forecast", "--history", str(history), *TYPED, "--users-per-day", "20000",
               "-f", "html", "-o", str(out))  # fmt: skip
    assert page.exit_code == 0 and page.stderr.strip() == f"wrote {out}"
    tree = parse(out.read_text())
    section = tree.find(id="forecast-ctr")
    assert section is not None and section.attrs["data-signal"] == "ndcg@10"
    assert section.find(**{"data-field": "lift"}).text() == f"{lift * 100:+.2f}%"
    interval = f"[{low * 100:+.2f}%, {high * 100:+.2f}%]"
    assert section.find(**{"data-field": "interval"}).text() == interval
    go = section.find(**{"data-field": "go"})
    assert go.text().strip() == lines[5].strip() + "."
    chart = section.find(**{"data-field": "chart"})
    assert len(chart.find_all(**{"data-field": "point"})) == len(rows)
    assert chart.find(**{"data-field": "candidate"}) is not None
    assert chart.find(**{"data-field": "band"}).attrs["d"].startswith("M")
    axes = [t.text() for t in chart.find_all("text", class_="axis-title")]
    assert axes == ["online lift", "offline lift"]


def test_the_band_is_the_forecast_across_offline_lifts(tmp_path: Path) -> None:
    """The chart's band: at each offline lift, the forecast of a candidate with that
    lift and the candidate's standard error; at the candidate's own lift (the
    largest here, so the band's last point) the candidate's forecast."""
    rows = _rows()
    history = _write(tmp_path / "h.csv", rows)
    result = run("forecast", "--history", str(history), *TYPED, "-f", "json")
    assert result.exit_code == 0, result.output
    f = json.loads(result.stdout)["forecast"]
    band = f["band"]
    fitted = fit(_history_rows(rows))
    xs = [float(r["offline_lift"]) for r in rows]  # type: ignore[arg-type]
    assert band[0]["offline_lift"] == pytest.approx(min(xs))
    assert band[-1]["offline_lift"] == pytest.approx(0.031)
    for b in band[::10]:
        at = predict(fitted, b["offline_lift"], 0.008)
        assert at.interval is not None
        assert (b["point"], b["low"], b["high"]) == pytest.approx((at.point, *at.interval))
    assert (band[-1]["low"], band[-1]["high"]) == pytest.approx(f["interval"])
    assert [p["offline_lift"] for p in f["points"]] == pytest.approx(xs)


def test_the_candidate_s_evaluation_is_run_by_the_command(tmp_path: Path) -> None:
    """hit_rate@1 over 4 users: production hits 2 (0.5), the candidate 4 (1.0):
    relative lift (1.0 − 0.5) / 0.5 = 1; the paired differences (1, 0, 1, 0) have
    standard error sd / √4 = 0.57735 / 2, relative 0.57735."""
    truth = tmp_path / "truth.csv"
    truth.write_text("user_id,item_id\nu1,a\nu2,b\nu3,c\nu4,d\n")
    prod = tmp_path / "prod.csv"
    prod.write_text("user_id,item_id,rank\nu1,x,1\nu1,a,2\nu2,b,1\nu3,x,1\nu3,c,2\nu4,d,1\n")
    cand = tmp_path / "cand.csv"
    cand.write_text("user_id,item_id,rank\nu1,a,1\nu2,b,1\nu3,c,1\nu4,d,1\n")
    rows = _rows()
    for r in rows:
        r["signal"] = "hit_rate@1"
    history = _write(tmp_path / "h.csv", rows)
    result = run(
        "forecast", "--history", str(history), "-t", str(truth), "-r", f"control={prod}",
        "-r", f"candidate={cand}", "--k", "1", "-f", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    f = json.loads(result.stdout)["forecast"]
    assert f["signal"] == "hit_rate@1"
    assert f["offline_lift"] == pytest.approx(1.0)
    assert f["offline_se"] == pytest.approx(np.std([1, 0, 1, 0], ddof=1) / 2 / 0.5)


def test_an_outlying_experiment_is_named_with_the_forecast_without_it(tmp_path: Path) -> None:
    """One past experiment moved by 12 standard errors: the text shows one line
    naming it with the forecast of the fit on the others, and JSON the same
    numbers; a clean history shows no such line."""
    rows = _rows()
    moved = float(rows[4]["online_lift"]) + 12 * float(rows[4]["online_se"])  # type: ignore[arg-type]
    rows[4] = {**rows[4], "online_lift": round(moved, 6)}
    history = _write(tmp_path / "h.csv", rows)
    text = run("forecast", "--history", str(history), *TYPED)
    assert text.exit_code == 0, text.output
    others = _history_rows(rows[:4] + rows[5:])
    without = predict(fit(others), 0.031, 0.008)
    assert without.interval is not None and without.point is not None
    low, high = without.interval
    line = next(x for x in text.stdout.splitlines() if x.startswith("  Outlier: "))
    assert line.startswith(f"  Outlier: exp-04 measured {moved * 100:+.2f}% where the others ")
    assert line.endswith(
        f"without it: {without.point * 100:+.2f}%, interval [{low * 100:+.2f}%, {high * 100:+.2f}%]"
    )
    doc = json.loads(run("forecast", "--history", str(history), *TYPED, "-f", "json").stdout)
    found = doc["forecast"]["influence"]
    assert found["experiment"] == "exp-04" and found["flagged"] and found["p_value"] < 0.05
    assert found["point"] == pytest.approx(without.point, rel=1e-12)
    clean = run("forecast", "--history", str(_write(tmp_path / "c.csv", _rows())), *TYPED)
    assert "Outlier" not in clean.stdout
