"""``abeval program --history FILE`` and ``abeval.program``: the JSON's keys and
numbers from their definitions, the text, per-tag statistics, and every bad
history as one line naming the file, line and column, exit 1, nothing written."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from ingest_store import run
from statsmodels.stats.proportion import proportion_confint

import abeval

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "program.csv"
HEADER = ["experiment", "metric", "lift", "se", "status", "date", "tag"]


def _write(path: Path, rows: list[list[object]], header: list[str] = HEADER) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def doc() -> dict:
    result = run("program", "--history", str(EXAMPLE), "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_has_the_issue_keys_and_numbers_from_their_definitions(doc: dict) -> None:
    with EXAMPLE.open() as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "ctr"]
    program = doc["program"]
    assert program["experiments"] == 24
    decided = [r for r in rows if r["status"] != "running"]
    wins = [r for r in decided if float(r["lift"]) - 1.959963984540054 * float(r["se"]) > 0]
    assert program["win_rate"]["value"] == pytest.approx(len(wins) / len(decided))
    low, high = proportion_confint(len(wins), len(decided), method="wilson")
    assert program["win_rate"]["interval"] == [pytest.approx(low), pytest.approx(high)]
    shipped = [r for r in rows if r["status"] == "shipped"]
    impact = program["impact"]
    assert impact["metric"] == "ctr" and impact["shipped"] == len(shipped) == 4
    assert impact["raw"] == pytest.approx(sum(float(r["lift"]) for r in shipped))
    shrunk = {e["experiment"]: e["shrunk"] for e in doc["experiments"] if e["metric"] == "ctr"}
    assert impact["debiased"] == pytest.approx(sum(shrunk[r["experiment"]] for r in shipped))
    assert impact["interval"][0] < impact["debiased"] < impact["interval"][1]
    assert impact["debiased"] < impact["raw"]  # the winners' curse, undone in part
    prior = program["prior"]
    assert {"kind", "mean", "sd"} <= set(prior) and prior["kind"] == "normal"
    assert [p["metric"] for p in program["priors"]] == ["ctr", "conversion"]
    assert program["priors"][1]["kind"] == "none"
    assert set(doc["experiments"][0]) >= {
        "experiment", "metric", "lift", "se", "status", "shrunk", "shrunk_interval",
    }  # fmt: skip
    conversion = [e for e in doc["experiments"] if e["metric"] == "conversion"]
    assert all(e["shrunk"] == e["lift"] for e in conversion)  # no prior from 5


def test_shrunk_lifts_are_the_statistics_layers_posteriors(doc: dict) -> None:
    from abeval.stats.program import fit_prior, shrink

    ctr = [e for e in doc["experiments"] if e["metric"] == "ctr"]
    lifts, ses = [e["lift"] for e in ctr], [e["se"] for e in ctr]
    for e, s in zip(ctr, shrink(fit_prior(lifts, ses), lifts, ses), strict=True):
        assert e["shrunk"] == pytest.approx(s.mean, rel=1e-12)
        assert e["shrunk_interval"] == [pytest.approx(s.low), pytest.approx(s.high)]
        assert min(e["lift"], doc["program"]["prior"]["mean"]) - 0.002 < e["shrunk"]
        assert e["shrunk"] < max(e["lift"], doc["program"]["prior"]["mean"]) + 0.002


def test_tags_split_the_primary_metric(doc: dict) -> None:
    tags = {t["tag"]: t for t in doc["program"]["tags"]}
    assert set(tags) == {"search", "home"}
    assert tags["search"]["experiments"] + tags["home"]["experiments"] == 24
    assert tags["home"]["impact"]["raw"] == pytest.approx(doc["program"]["impact"]["raw"])
    assert tags["search"]["impact"]["shipped"] == 0


def test_text_says_the_prior_the_win_rate_and_the_impact() -> None:
    result = run("program", "--history", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"Program {EXAMPLE}: 24 experiments, primary metric ctr, 95% intervals"
    assert lines[2] == (
        "Prior of true effects (conversion): none — a prior needs at least 10 experiments "
        "of a metric and 5 are given: the shrunken lifts are the raw ones"
    )
    assert lines[3].startswith("Win rate: 4 of 21 decided won: 19.0% [")
    assert lines[4].startswith("Impact (ctr): 4 shipped: raw +11.05%, de-biased +")


def test_api_takes_a_data_frame_and_gives_the_same_numbers() -> None:
    import pandas as pd

    from_file = abeval.program(history=EXAMPLE, primary="ctr")
    from_frame = abeval.program(history=pd.read_csv(EXAMPLE))
    assert from_frame.overall == from_file.overall
    assert from_frame.to_frame().shape == (29, 12)


def _rows(k: int) -> list[list[object]]:
    rng = np.random.default_rng(k)
    return [
        [f"e{i}", "ctr", round(float(rng.normal(0, 0.02)), 4), 0.01, "abandoned", "", ""]
        for i in range(k)
    ]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["e1", "ctr", 0.01, 0.005, "shipped", "", ""]],
         "{f}: the history holds one experiment (e1); give a row for every experiment "
         "of the program"),
        ([*_rows(3), ["e9", "ctr", 0.01, "", "", "", ""]],
         "{f}: line 5, column se: empty; give the lift's standard error, above 0"),
        ([*_rows(3), ["e9", "ctr", 0.01, 0, "", "", ""]],
         "{f}: line 5, column se: 0 is not above 0; give the lift's standard error, above 0"),
        ([*_rows(2), ["e9", "ctr", 0.01, 0.01, "won", "", ""]],
         "{f}: line 4, column status: 'won' is not a status; give one of running, shipped, "
         "rolled_back, abandoned, or leave it empty"),
        ([*_rows(2), ["e0", "ctr", 0.01, 0.01, "abandoned", "", ""]],
         "{f}: line 4, column experiment: 'e0' has a second ctr row (first at line 2); "
         "keep one row per experiment and metric"),
        ([*_rows(3), ["e9", "ctr", 0.01, 1e308, "", "", ""]],
         "{f}: line 5, column se: 1e+308 is beyond ±1000 (a relative lift of ±100,000%); "
         "give the lift's standard error, above 0"),
        ([*_rows(3), ["e9", "ctr", -1001, 0.01, "", "", ""]],
         "{f}: line 5, column lift: -1001 is beyond ±1000 (a relative lift of ±100,000%); "
         "give the experiment's relative lift, e.g. 0.012 for +1.2%"),
        ([*_rows(2), ["e9", "ctr", "+1.2%", 0.01, "", "", ""]],
         "{f}: line 4, column lift: '+1.2%' is not a number; give the experiment's relative "
         "lift, e.g. 0.012 for +1.2%"),
        ([["e1", "ctr", 0.01, 0.01, "shipped", "", ""],
          ["e1", "cvr", 0.01, 0.01, "running", "", ""]],
         "{f}: line 3, column status: 'e1' is running here and shipped at line 2; "
         "give an experiment one status"),
    ],
)  # fmt: skip
def test_bad_history_is_one_line_and_nothing_is_written(
    tmp_path: Path, rows: list[list[object]], message: str
) -> None:
    path = _write(tmp_path / "h.csv", rows)
    out = tmp_path / "out.json"
    result = run("program", "--history", str(path), "-f", "json", "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message.format(f=path)}\n"
    assert not out.exists()


def test_missing_column_and_bad_options(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.csv", [["e1", "ctr", 0.01]], ["experiment", "metric", "lift"])
    result = run("program", "--history", str(path))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: no column se; a history needs the columns experiment, metric, lift, "
        "se (optional: status, date, tag)\n"
    )
    result = run("program", "--history", str(EXAMPLE), "--alpha", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --alpha 2")
    result = run("program", "--history", str(EXAMPLE), "--primary", "revenue")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {EXAMPLE}: no metric 'revenue'; give --primary one of ctr, conversion\n"
    )


def test_too_few_experiments_say_why_and_keep_raw_lifts(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.csv", [*_rows(5)[:4], ["e9", "ctr", 0.05, 0.01, "shipped", "", ""]])
    doc = json.loads(run("program", "--history", str(path), "-f", "json").stdout)
    assert doc["program"]["prior"]["kind"] == "none"
    assert doc["program"]["impact"]["raw"] == pytest.approx(0.05)
    assert doc["program"]["impact"]["debiased"] is None
    assert "at least 10 experiments" in doc["program"]["impact"]["message"]
    assert not math.isnan(doc["program"]["win_rate"]["value"])


def test_parquet_history_gives_the_csv_numbers(tmp_path: Path) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = tmp_path / "program.parquet"
    pq.write_table(pacsv.read_csv(EXAMPLE), path)
    from_parquet = json.loads(run("program", "--history", str(path), "-f", "json").stdout)
    from_csv = json.loads(run("program", "--history", str(EXAMPLE), "-f", "json").stdout)
    assert from_parquet["program"]["impact"] == from_csv["program"]["impact"]
    assert from_parquet["experiments"] == from_csv["experiments"]


def test_a_program_of_mostly_nulls_says_its_mixture(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows: list[list[object]] = []
    for i in range(200):
        se = float(rng.lognormal(math.log(0.015), 0.35))
        theta = 0.04 if i % 5 == 0 else 0.0
        lift = theta + float(rng.normal(0, se))
        status = "shipped" if lift / se > 1.96 else "abandoned"
        rows.append([f"e{i}", "ctr", round(lift, 6), round(se, 6), status, "", ""])
    path = _write(tmp_path / "h.csv", rows)
    doc = json.loads(run("program", "--history", str(path), "-f", "json").stdout)
    prior = doc["program"]["prior"]
    assert prior["kind"] == "mixture"
    assert prior["null_share"] == pytest.approx(0.8, abs=0.08)
    assert prior["effect_mean"] == pytest.approx(0.04, abs=0.008)
    whole = (1 - prior["null_share"]) * prior["effect_mean"]
    assert prior["mean"] == pytest.approx(whole, rel=1e-12)
    nulls = [e for e in doc["experiments"] if e["shrunk_interval"] == [0.0, 0.0]]
    assert nulls and all(e["null_probability"] > 0.95 for e in nulls)
    text = run("program", "--history", str(path)).stdout.splitlines()
    assert text[1].startswith(
        f"Prior of true effects (ctr): {prior['null_share'] * 100:.1f}% exactly 0, the rest "
        f"normal with mean {prior['effect_mean'] * 100:+.2f}%"
    )
    assert text[1].endswith("(chosen over the normal by AIC, 200 experiments)")
