"""Options are validated once, in the library (docs/architecture.md#errors): the
CLI prints the library's OptionError with the option's spelling, so a bad value
reads the same through every command and through the API, which names the
parameter instead; a misspelt keyword of the API gets a did-you-mean."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import abeval
from abeval import api
from abeval.cli import app
from abeval.errors import KeywordError, OptionError

runner = CliRunner()
ROOT: Any = typer.main.get_command(app)

#: What each command that takes --k needs besides it, and the files those name.
NEEDS: dict[str, list[str]] = {
    "report": ["-e", "x"],
    "evaluate": ["-t", "truth.csv", "-r", "a.csv"],
    "forecast": ["-t", "truth.csv", "-r", "control=a.csv", "-r", "candidate=b.csv"],
}
#: The words of the cutoffs' definition (docs/metrics.md): whole numbers of at least 1.
NOT_WHOLE = "give cutoffs as whole numbers, as in 5,10,20"


def _taking_k() -> list[str]:
    return sorted(
        name
        for name, cmd in ROOT.commands.items()
        if any("--k" in p.opts for p in getattr(cmd, "params", []))
    )


def test_every_command_taking_k_is_covered() -> None:
    assert _taking_k() == sorted(NEEDS)


@pytest.mark.parametrize("command", sorted(NEEDS))
def test_k_with_a_word_is_refused_the_same_way_by_every_command(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("truth.csv", "a.csv", "b.csv"):
        (tmp_path / name).write_text("user_id,item_id,rank\n")
    args = [command, *NEEDS[command], "--k", "5,x"]
    if command != "evaluate":
        args += ["--db", str(tmp_path / "none.duckdb")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: --k '5,x': {NOT_WHOLE}\n"
    assert not (tmp_path / "none.duckdb").exists()


@pytest.mark.parametrize(
    "call",
    [
        lambda: api.report_options(k="5,x"),
        lambda: api.forecast_evidence(truth="t.csv", recommendations={"a": "a", "b": "b"}, k="5,x"),
        lambda: api.evaluate("t.csv", {"a": "a.csv"}, k="5,x"),
    ],
    ids=["report_options", "forecast_evidence", "evaluate"],
)
def test_k_with_a_word_is_refused_the_same_way_by_the_api(call: Callable[[], Any]) -> None:
    with pytest.raises(OptionError) as caught:
        call()
    assert caught.value.parameter == "k"
    assert caught.value.value == "5,x"
    assert str(caught.value) == f"k='5,x': {NOT_WHOLE}"


#: A bad value through the CLI and through the API: the same reason, the CLI
#: naming the option, the API the parameter.
SAME = [
    (["power", "--baseline", "0.05", "--mde", "0.02", "--alpha", "2"],
     lambda: api.plan_power(0.05, mde=0.02, alpha=2.0), "alpha", "2",
     "must be between 0 and 1 (exclusive)"),
    (["power", "--baseline", "0.05", "--mde", "0.02", "--power", "1"],
     lambda: api.plan_power(0.05, mde=0.02, power=1.0), "power", "1",
     "must be between 0 and 1 (exclusive)"),
    (["power", "--baseline", "0.05", "--mde", "0.02", "--arms", "1"],
     lambda: api.plan_power(0.05, mde=0.02, arms=1), "arms", "1",
     "a test needs a control and at least one treatment"),
    (["power", "--baseline", "0.05", "--mde", "2"],
     lambda: api.plan_power(0.05, mde=2.0), "mde", "2",
     "did you mean 0.02 (2%)? give the lift as a share (0.02 for +2%)"),
    (["power", "--baseline", "0.05", "--users", "1"],
     lambda: api.plan_power(0.05, users=1), "users", "1", "give at least 2 users per arm"),
    (["report", "-e", "x", "--tuning-n", "inf"],
     lambda: api.report_options(tuning_n=math.inf), "tuning_n", "inf",
     "must be a number above 0"),
    (["report", "-e", "x", "--ope-cap", "0"],
     lambda: api.report_options(ope_cap=0.0), "ope_cap", "0", "must be a number above 0"),
    (["forecast", "--offline-lift", "0.03", "--offline-se", "0.01", "--assurance", "1"],
     lambda: api.forecast_options(assurance=1.0), "assurance", "1",
     "must be between 0 and 1 (exclusive)"),
    (["forecast", "--offline-lift", "0.03", "--offline-se", "-1"],
     lambda: api.forecast_evidence(offline_lift=0.03, offline_se=-1.0), "offline_se", "-1",
     "give a standard error, 0 or more"),
    (["evaluate", "-t", "t.csv", "-r", "a.csv", "--resamples", "0"],
     lambda: api.evaluate("t.csv", {"a": "a.csv"}, resamples=0), "resamples", "0",
     "give 1 to 10,000,000"),
    (["agreement", "--resamples", "10"],
     lambda: api.agreement_history("h.csv", resamples=10), "resamples", "10",
     "give 100 to 100,000"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "call", "parameter", "shown", "reason"), SAME, ids=[" ".join(s[0]) for s in SAME]
)
def test_a_bad_value_reads_the_same_through_the_cli_and_the_api(
    args: list[str],
    call: Callable[[], Any],
    parameter: str,
    shown: str,
    reason: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("t.csv", "a.csv"):
        (tmp_path / name).write_text("user_id,item_id,rank\n")
    option = "--" + parameter.replace("_", "-")
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {option} {shown}: {reason}\n"
    with pytest.raises(OptionError) as caught:
        call()
    assert caught.value.parameter == parameter
    assert str(caught.value) == f"{parameter}={shown}: {reason}"


def test_a_reason_naming_another_option_spells_it_as_the_caller_knows_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["forecast", "--offline-lift", "0.03", "--db", "none.duckdb"])
    assert result.exit_code == 2
    together = "an offline lift and its standard error go together"
    assert result.stderr == f"Error: --offline-se: needed with --offline-lift: {together}\n"
    with pytest.raises(OptionError, match=f"^offline_se: needed with offline_lift: {together}$"):
        api.forecast_evidence(offline_lift=0.03)


@pytest.mark.parametrize(
    ("call", "function", "keyword", "meant"),
    [
        (lambda: api.report_options(alpah=0.1), "report_options", "alpah", "alpha"),
        (lambda: abeval.evaluate(trth="t.csv"), "evaluate", "trth", "truth"),
        (lambda: abeval.evaluate("t.csv", resample=5), "evaluate", "resample", "resamples"),
        (lambda: api.plan_power(0.05, mde=0.02, tunning_n=10.0), "plan_power", "tunning_n",
         "tuning_n"),
        (lambda: api.forecast_history("h.csv", None, asurance=0.9), "forecast_history",
         "asurance", "assurance"),
        (lambda: abeval.open("x.duckdb", readonly=True), "open", "readonly", "read_only"),
    ],
)  # fmt: skip
def test_a_misspelt_keyword_names_the_closest_one(
    call: Callable[[], Any], function: str, keyword: str, meant: str
) -> None:
    with pytest.raises(KeywordError) as caught:
        call()
    error = caught.value
    assert isinstance(error, TypeError) and isinstance(error, OptionError)
    assert error.parameter == keyword
    assert str(error) == f"{keyword}: {function}() takes no such keyword; did you mean {meant}?"
    assert meant in (error.allowed or ())


def test_a_keyword_like_none_has_no_did_you_mean() -> None:
    with pytest.raises(TypeError, match=r"^zzzzzz: report_options\(\) takes no such keyword$"):
        api.report_options(zzzzzz=1)


def test_a_store_method_refuses_a_misspelt_keyword(tmp_path: Path) -> None:
    with abeval.open(tmp_path / "s.duckdb") as store:
        with pytest.raises(KeywordError, match=r"^alpah: report\(\) .*did you mean alpha\?$"):
            store.report("x", alpah=0.1)
        with pytest.raises(KeywordError, match=r"^limt: rejects\(\) .*did you mean limit\?$"):
            store.rejects(limt=3)
        with pytest.raises(KeywordError, match=r"^cuped_day: set\(\) .*did you mean cuped_days\?$"):
            store.set("x", cuped_day=3)
        with pytest.raises(OptionError, match=r"^limit=0: give at least 1 row$"):
            store.rejects(limit=0)


#: Checks of several options at once, decided by the library before any store is
#: opened: the CLI's line (the options as it spells them) and the API's.
COMBINED = [
    (["experiment", "set", "home"], lambda: api.set_options(), "",
     "give --control, --split, --from, --to, --target-propensities or an option to record",
     "give control, split, window_from, window_to, target_propensities or an option to record"),
    (["experiment", "unset", "home"], lambda: api.unset_options([]), "names",
     "name at least one setting to remove, such as --guardrails",
     "names: name at least one setting to remove, such as guardrails"),
    (["ingest", "-", "-", "--input-format", "csv"], lambda: api.ingest_options(["-", "-"]),
     "files", "FILE: standard input can be read once; give - once",
     "files: standard input can be read once; give - once"),
    (["forecast", "--offline-lift", "0.03", "--offline-se", "0.01", "-t", "t.csv"],
     lambda: api.forecast_evidence(offline_lift=0.03, offline_se=0.01, truth="t.csv"),
     "offline_lift",
     "--offline-lift: give the candidate's offline evidence once: --offline-lift and "
     "--offline-se, or --truth and two --recommendations, or --target-propensities and "
     "--experiment",
     "offline_lift: give the candidate's offline evidence once: offline_lift and offline_se, "
     "or truth and two recommendations, or target_propensities and experiment"),
    (["forecast", "--target-propensities", "t.csv"],
     lambda: api.forecast_inputs(target_propensities="t.csv"), "experiment",
     "--experiment: name the stored experiment whose production logs --target-propensities "
     "reweights",
     "experiment: name the stored experiment whose production logs target_propensities "
     "reweights"),
    (["forecast", "--experiment", "x", "--target-propensities", "t.csv", "--history", "h.csv"],
     lambda: api.forecast_inputs(target_propensities="t.csv", experiment="x", history="h.csv"),
     "history", "--history: off-policy evidence reads the store; leave it out",
     "history: off-policy evidence reads the store; leave it out"),
    (["power", "--experiment", "x", "--baseline", "0.05"],
     lambda: api.power_inputs(experiment="x", baseline=0.05), "baseline",
     "--baseline: plans from the data with --experiment: leave it out",
     "baseline: plans from the data with experiment: leave it out"),
    (["power", "--mde", "0.02"], lambda: api.power_inputs(), "baseline",
     "--baseline: give the control value, or --experiment",
     "baseline: give the control value, or experiment"),
    (["agreement", "--history", "h.csv"],
     lambda: api.agreement_inputs(history="h.csv", db="s.duckdb"), "db",
     "--db: give either --history or --db", "db: give either history or db"),
    (["ingest", "e.csv", "--input-format", "csv", "--format", "parquet"],
     lambda: api.ingest_options(["e.csv"], input_format="csv", fmt="parquet"), "input_format",
     "--input-format: give it once, not also --format",
     "input_format: give it once, not also fmt"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "call", "parameter", "cli", "api_line"),
    COMBINED,
    ids=[" ".join(c[0]) for c in COMBINED],
)
def test_a_combination_of_options_is_refused_by_the_library_for_both(
    args: list[str],
    call: Callable[[], Any],
    parameter: str,
    cli: str,
    api_line: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*args, "--db", "s.duckdb"], input="")
    assert result.exit_code == 2, result.output
    assert (result.stdout, result.stderr) == ("", f"Error: {cli}\n")
    assert not (tmp_path / "s.duckdb").exists()
    with pytest.raises(OptionError) as caught:
        call()
    assert caught.value.parameter == parameter
    assert str(caught.value) == api_line


def test_store_methods_refuse_the_same_combinations(tmp_path: Path) -> None:
    events = tmp_path / "e.csv"
    events.write_text("experiment,arm,user_id,ts,event_type\nx,A,u1,2024-05-01,exposure\n")
    with abeval.open(tmp_path / "s.duckdb") as store:
        with pytest.raises(OptionError, match=r"^input_format: give it once, not also fmt$"):
            store.ingest(events, input_format="csv", fmt="parquet")
        assert store.ingest(events, input_format="csv", fmt="csv").inserted == 1
        with pytest.raises(OptionError, match=r"^give control, split, .* an option to record$"):
            store.set("x")
        with pytest.raises(OptionError, match=r"^names: name at least one setting to remove"):
            store.unset("x", [])
        with pytest.raises(OptionError, match=r"^names='alpah': choose from control, split, "):
            store.unset("x", ["alpah"])
        store.set("x", alpha=0.01)
        assert store.unset("x", ["alpha"])[1].alpha is None


def test_a_forecast_refuses_evidence_given_twice(tmp_path: Path) -> None:
    evidence = api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
    with abeval.open(tmp_path / "s.duckdb") as store, pytest.raises(OptionError) as caught:
        store.forecast(evidence, experiment="x", target_propensities="t.csv")
    assert str(caught.value) == (
        "evidence: give the candidate's evidence once: evidence, or target_propensities and "
        "experiment"
    )
