"""The Python API (docs/python.md): the worked example runs as shown, the API's
results are the CLI's, and bad options raise OptionError with their fields."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ingest_store import simulated_store
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.errors import AbevalError, OptionError, StoreError

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return simulated_store(tmp_path_factory.mktemp("api"), users=400, seed=3)


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_worked_example_prints_what_the_docs_show(tmp_path: Path) -> None:
    (code,) = _blocks("python")
    (shown,) = _blocks("text")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the library never prints
    assert done.stdout == shown


def _same(a: object, b: object, where: str = "") -> bool:
    """Equal JSON documents, floats to 1e-9 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        return all(_same(a[k], b[k], f"{where}.{k}") for k in a)
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        return all(_same(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True)))
    if isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
        return True
    assert a == b, where
    return True


def test_report_to_dict_is_the_cli_json(db: str) -> None:
    cli = runner.invoke(app, ["report", "-e", "home-reco-v2", "--db", db, "--format", "json"])
    assert cli.exit_code == 0, cli.output
    with abeval.open(db, read_only=True) as store:
        report = store.report("home-reco-v2")
    from_cli = json.loads(cli.stdout)
    mine = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    # generated_at is the moment of each run; everything else is the same (sums
    # over DuckDB's threads may differ in their last bits from run to run).
    assert from_cli.pop("generated_at") and mine.pop("generated_at")
    assert _same(mine, from_cli)
    page = report._repr_html_()  # Jupyter's: a bare table (tests/api/test_frames.py)
    assert page.startswith('<div class="abeval-table">') and "<style" not in page
    assert "home-reco-v2" in page


def test_options_as_lists_or_text_give_the_same_report(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        a = store.report("home-reco-v2", primary=["ctr"], k=[10, 5], offline=False, ope=False)
        b = store.report("home-reco-v2", primary="ctr", k="5,10", offline=False, ope=False)
    assert a.settings.primary == b.settings.primary == ("ctr",)
    assert a.settings == b.settings


def test_power_is_the_cli_json(db: str) -> None:
    cli = runner.invoke(
        app, ["power", "--experiment", "home-reco-v2", "--db", db, "--mde", "0.05", "--json"]
    )
    assert cli.exit_code == 0, cli.output
    with abeval.open(db, read_only=True) as store:
        rows = store.power("home-reco-v2", mde=0.05)
        report = store.report("home-reco-v2", target_mde=0.05, offline=False)
    assert _same([r.to_dict() for r in rows], json.loads(cli.stdout))
    # the report's power section, for the same options, is the same rows
    assert _same([r.to_dict() for r in rows], [r.to_dict() for r in report.power])
    assert [(r.metric, r.arm) for r in rows] == [
        ("ctr", "treatment"),
        ("conversion", "treatment"),
    ]


def test_experiments_lists_the_store(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        found = store.experiments()
    assert [e.experiment for e in found] == ["home-reco-v2"]
    assert {a.arm for a in found[0].arms} == {"control", "treatment"}
    assert sum(a.users for a in found[0].arms) == 400
    assert found.problems == ()


@pytest.mark.parametrize(
    ("options", "parameter", "value", "allowed"),
    [
        ({"primary": "ctr,convrsion"}, "primary", "ctr,convrsion", "ctr"),
        ({"guardrails": ["aovv"]}, "guardrails", ["aovv"], "aov"),
        ({"k": [0, 5]}, "k", [0, 5], None),
        ({"alpha": 1.5}, "alpha", 1.5, None),
        ({"correction": "bonferroni"}, "correction", "bonferroni", "holm"),
        ({"control": "ctrl"}, "control", "ctrl", "control"),
        ({"window_from": "2025-13-01"}, "window_from", "2025-13-01", None),
        ({"cap": {"revenue_per_user": 2.0}}, "cap", {"revenue_per_user": 2.0}, None),
    ],
)
def test_a_bad_option_raises_option_error_with_its_fields(
    db: str, options: dict[str, object], parameter: str, value: object, allowed: str | None
) -> None:
    with abeval.open(db, read_only=True) as store, pytest.raises(OptionError) as caught:
        store.report("home-reco-v2", **options)
    exc = caught.value
    assert (exc.parameter, exc.value, exc.exit_code) == (parameter, value, 2)
    assert isinstance(exc, AbevalError)
    if allowed is not None:
        assert allowed in exc.allowed  # type: ignore[operator]
    assert exc.message.startswith(parameter)
    assert "--" not in exc.reason.split("`")[0]  # the library names no CLI option


def test_power_and_agreement_check_their_options(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        with pytest.raises(OptionError) as caught:
            store.power("home-reco-v2", metric="ctrr")
        assert caught.value.parameter == "metric"
        with pytest.raises(OptionError) as caught:
            store.power("home-reco-v2", power=1.0)
        assert (caught.value.parameter, caught.value.value) == ("power", 1.0)
        with pytest.raises(OptionError) as caught:
            store.agreement(resamples=10)
        assert (caught.value.parameter, caught.value.value) == ("resamples", 10)


def test_evaluate_checks_k_and_takes_paths(tmp_path: Path) -> None:
    truth = tmp_path / "truth.csv"
    truth.write_text("user_id,item_id\nu1,a\nu2,b\n")
    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,item_id,rank\nu1,a,1\nu2,c,1\n")
    with pytest.raises(OptionError) as caught:
        abeval.evaluate(truth, {"m": recs}, k=[0])
    assert (caught.value.parameter, caught.value.value) == ("k", [0])
    result = abeval.evaluate(truth, {"m": recs}, k=[1], metrics=["precision@1"])
    (metric,) = result.metrics
    assert (metric.group, metric.metric, metric.value) == ("m", "precision@1", 0.5)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--k", "0"], "Error: --k '0': give cutoffs of at least 1, as in 5,10,20"),
        (["--k", "x"], "Error: --k 'x': give cutoffs as whole numbers, as in 5,10,20"),
        (
            ["--missing", "zero", "--k", "0,1"],
            "Error: --k '0,1': give cutoffs of at least 1, as in 5,10,20",
        ),
    ],
)
def test_evaluate_usage_errors_exit_2_with_one_line(
    tmp_path: Path, args: list[str], line: str
) -> None:
    truth = tmp_path / "truth.csv"
    truth.write_text("user_id,item_id\nu1,a\n")
    result = runner.invoke(app, ["evaluate", "-t", str(truth), "-r", str(truth), *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


def test_a_metric_name_is_checked_against_the_store(tmp_path: Path) -> None:
    """A metric may be one of the store's team-defined metrics, so an unknown name
    is judged once the store is open: on a missing store, the store's error comes
    first (and nothing is created); a name that is not an identifier is refused at once."""
    missing = tmp_path / "none.duckdb"
    primary = runner.invoke(app, ["report", "-e", "x", "--primary", "foo", "--db", str(missing)])
    assert primary.exit_code == 1
    assert primary.stderr.startswith("Error: ")
    assert "unknown metric" not in primary.stderr
    bad = runner.invoke(app, ["report", "-e", "x", "--primary", "Foo-1", "--db", str(missing)])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("Error: --primary 'Foo-1': unknown metric 'Foo-1'; known: ctr,")
    assert not missing.exists()


def test_read_only_open_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    with pytest.raises(StoreError):
        abeval.open(missing, read_only=True)
    assert not missing.exists()


def test_importing_abeval_loads_no_api_until_used() -> None:
    code = "import sys, abeval; print(sorted(m for m in sys.modules if m.startswith('abeval')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['abeval']"


def test_option_error_line_names_the_option_as_the_cli_spells_it() -> None:
    from abeval.cli.app import option_name

    exc = OptionError("window_from", "2025-13", "not a date", allowed="ISO 8601")
    assert exc.line(option_name(exc.parameter)) == "--from '2025-13': not a date"
    assert option_name("target_mde") == "--target-mde"
    assert OptionError("k", [0, 5], "too small").line("--k") == "--k '0,5': too small"
    assert OptionError("control", None, "none recorded").line("--control") == (
        "--control: none recorded"
    )


def test_input_error_carries_where_and_keeps_its_old_form() -> None:
    from abeval.errors import InputError

    old = InputError("events.csv: line 3: bad ts")
    assert (old.message, old.file, old.line, old.column, old.exit_code) == (
        "events.csv: line 3: bad ts",
        None,
        None,
        None,
        1,
    )
    new = InputError("events.csv: line 3, column ts: bad", file="events.csv", line=3, column="ts")
    assert (new.file, new.line, new.column, str(new)) == (
        "events.csv",
        3,
        "ts",
        "events.csv: line 3, column ts: bad",
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ([], "Error: --recommendations: nothing to evaluate; give recommendations or predictions"),
        (["-r", "R", "-m", "rmse"], "Error: --predictions: rmse needs rating predictions"),
        (["-r", "R", "-m", "serendipity@5"],
         "Error: --history: serendipity needs the users' history"),
        (["--predictions", "R", "-m", "ndcg@5"],
         "Error: --recommendations: ndcg@5 needs recommendations"),
    ],
)  # fmt: skip
def test_evaluate_missing_inputs_are_usage_errors(
    tmp_path: Path, args: list[str], line: str
) -> None:
    truth = tmp_path / "truth.csv"
    truth.write_text("user_id,item_id\nu1,a\n")
    given = [str(truth) if a == "R" else a for a in args]
    result = runner.invoke(app, ["evaluate", "-t", str(truth), *given])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [line]
