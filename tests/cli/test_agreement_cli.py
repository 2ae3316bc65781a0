"""``abeval agreement``: options, exit codes, exact messages, the three formats,
experiments without signals counted, and the store left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import BARE, build_store
from html_tree import parse
from ingest_store import counts, query, run


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_store(tmp_path_factory.mktemp("agreement-cli"))


def _state(db: str) -> tuple:
    return (*counts(Path(db)), query(Path(db), "SELECT count(*) FROM offline_evaluations")[0][0])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "1.5"], "--alpha 1.5: must be between 0 and 1 (exclusive)"),
        (["--alpha", "nan"], "--alpha nan: must be between 0 and 1 (exclusive)"),
        (["--resamples", "10"], "--resamples 10: give 100 to 100,000"),
        (["--seed", "-1"], "--seed -1: must be 0 or more"),
        (["--experiments", " , "], "--experiments: no experiment given; "
                                   "name them as a,b"),
        (["--primary", ","], "--primary ',': no metric given; name them as "
                             "ctr,conversion"),
        (["--target-propensities", "t.csv"], "--target-propensities: give "
                                             "EXPERIMENT=FILE, got 't.csv'"),
        (["--target-propensities", "a=t.csv", "--target-propensities", "a=u.csv"],
         "--target-propensities: experiment 'a' is given twice"),
    ],
)  # fmt: skip
def test_bad_options_are_usage_errors(db: str, args: list[str], message: str) -> None:
    before = _state(db)
    result = run("agreement", "--db", db, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
    assert result.stdout == ""
    assert _state(db) == before


def test_a_bad_format_is_a_usage_error(db: str) -> None:
    result = run("agreement", "--db", db, "--format", "xml")
    assert result.exit_code == 2
    assert result.stderr == "Error: --format 'xml': choose one of html, json, text\n"


def test_an_unknown_experiment_says_what_it_might_be(db: str, tmp_path: Path) -> None:
    out = tmp_path / "board.html"
    result = run("agreement", "--db", db, "--experiments", "exp-a,bear", "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no experiment 'bear' in the store; did you mean bare? "
        "(list them with `abeval experiments`)\n"
    )
    assert not out.exists()


def test_an_unknown_primary_metric_is_an_error(db: str) -> None:
    result = run("agreement", "--db", db, "--primary", "ctrr")
    assert result.exit_code == 2  # a usage error
    assert result.stderr.startswith(
        "Error: --primary 'ctrr': unknown metric 'ctrr'; did you mean ctr"
    )


def test_json_counts_experiments_without_signals(db: str, tmp_path: Path) -> None:
    before = _state(db)
    out = tmp_path / "board.json"
    result = run("agreement", "--db", db, "-e", "exp-a", "-e", "exp-b", "-e", "exp-d", "-e", BARE,
                 "-f", "json",
                 "-o", str(out), "--resamples", "200", "--seed", "3")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr == f"wrote {out}\n" and result.stdout == ""
    doc = json.loads(out.read_text())
    assert [e["experiment"] for e in doc["experiments"]] == ["exp-a", "exp-b", "exp-d", BARE]
    assert doc["experiments_without_signals"] == [BARE]
    assert doc["experiments_with_signals"] == 3
    assert (doc["seed"], doc["resamples"]) == (3, 200)
    assert {p["experiment"] for p in doc["pairs"]} == {"exp-a", "exp-b", "exp-d"}
    snips = next(s for s in doc["summary"] if (s["signal"], s["online_metric"]) == ("snips", "ctr"))
    assert snips["experiments"] == 3 and snips["status"] == "ok"
    assert _state(db) == before  # read only


def test_too_few_experiments_is_a_status_not_a_failure(db: str) -> None:
    result = run("agreement", "--db", db, "-e", "exp-a", "-e", "exp-b", "-f", "text")
    assert result.exit_code == 0, result.output
    assert "2 experiments: 2 with offline signals, 0 without, 0 skipped" in result.stdout
    assert "2 experiments: a correlation needs 3 or more" in result.stdout


def test_html_is_the_default_and_goes_to_reports(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(
        "agreement", "--db", db, "--experiments", f"exp-b,exp-c,exp-d,{BARE}", "--resamples", "200"
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == "wrote reports/agreement.html\n"
    page = parse((tmp_path / "reports" / "agreement.html").read_text())
    assert page.field("without-signals") == "1"
    assert page.find("tr", data_experiment=BARE).attrs["data-status"] == "no_signals"
    assert page.find_all("svg", class_="scatter")


def test_help_lists_the_formats() -> None:
    result = run("agreement", "--help")
    assert result.exit_code == 0
    assert "--format <html|json|text>" in result.stdout


def test_a_target_file_for_an_unknown_experiment_is_an_error(db: str, tmp_path: Path) -> None:
    before = _state(db)
    target = tmp_path / "t.csv"
    target.write_text("request_id,item_id,position,probability\n")
    result = run("agreement", "--db", db, "--target-propensities", f"bear={target}")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: no experiment 'bear' in the store; did you mean bare?")
    assert _state(db) == before


def test_a_missing_target_file_is_an_error_not_a_skipped_experiment(
    db: str, tmp_path: Path
) -> None:
    before = _state(db)
    missing = tmp_path / "nope.csv"
    result = run("agreement", "--db", db, "--target-propensities", f"bare={missing}")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {missing}: no such target propensities file; check the path\n"
    assert result.stdout == ""
    assert _state(db) == before


def test_backtest_on_the_store_orders_by_start(db: str) -> None:
    result = run("agreement", "--db", db, "--backtest", "-f", "json", "--resamples", "200",
                 "--primary", "ctr")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    signals = {(s["signal"], s["source"]) for s in doc["summary"]}
    assert {(b["signal"], b["source"]) for b in doc["backtest"]} == signals
    for b in doc["backtest"]:
        # Four experiments with signals, exp-c the last to start: only it has the
        # three earlier ones a forecast needs (fewer when a signal misses one).
        assert b["ordered_by"] == "start" and b["online_metric"] == "ctr"
        steps = b["result"]["steps"]
        assert {step["experiment"] for step in steps} <= {"exp-c"}
        assert (b["result"]["status"] == "ok") == bool(steps)
    text = run("agreement", "--db", db, "--backtest", "-f", "text", "--resamples", "200",
               "--primary", "ctr")  # fmt: skip
    assert text.exit_code == 0
    start = "Backtest: each experiment forecast from the earlier ones (ordered by experiment start)"
    assert any(line.startswith(start) for line in text.stdout.splitlines())
