"""Conventions every command keeps: --version, choices listed in --help, usage
errors with exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from abeval import __version__
from abeval.cli import app
from abeval.formatting import printable

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"abeval {__version__}\n"


@pytest.mark.parametrize(
    ("command", "option", "choices"),
    [
        ("report", "--format", "<html|json|text>"),
        ("report", "--correction", "<holm|bh>"),
        ("ingest", "--input-format", "<csv|parquet|jsonl>"),
        ("ingest", "--epoch", "<s|ms|us>"),
        ("ingest", "--on-error", "<abort|skip>"),
    ],
)
def test_help_lists_the_choices(command: str, option: str, choices: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert re.search(rf"{option} +{re.escape(choices)}", result.stdout), result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["report", "-e", "x", "--format", "txt"],
            "--format 'txt': choose one of html, json, text",
        ),
        (
            ["report", "-e", "x", "--correction", "bonferroni"],
            "'bonferroni': choose one of holm, bh",
        ),
        (["report", "-e", "x", "--k", "0"], "give cutoffs of at least 1"),
        (
            ["report", "-e", "x", "--alpha", "2"],
            "--alpha 2: must be between 0 and 1 (exclusive)",
        ),
    ],
)
def test_usage_errors_exit_with_2_before_touching_the_store(
    args: list[str], message: str, tmp_path: object
) -> None:
    result = runner.invoke(app, [*args, "--db", "no-such-store.duckdb"])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "2"], "--alpha 2: must be between 0 and 1 (exclusive)"),
        (
            ["--alpha", "nan"],
            "--alpha nan: must be between 0 and 1 (exclusive)",
        ),
        (["--power", "1"], "--power 1: must be between 0 and 1 (exclusive)"),
        (
            ["--arms", "1"],
            "--arms 1: a test needs a control and at least one treatment",
        ),
        (["--sd", "-1"], "--sd -1: must be a number above 0"),
        (
            ["--users-per-day", "0"],
            "--users-per-day 0: must be a number above 0",
        ),
        (["--tuning-n", "inf"], "--tuning-n inf: must be a number above 0"),
    ],
)
def test_power_options_are_checked(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["power", "--baseline", "0.05", "--mde", "0.02", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--mde", "0"],
            "--mde 0: give a relative lift other than 0 and above -1 (0.02 for +2%)",
        ),
        (
            ["--mde", "-1.5"],
            "--mde -1.5: give a relative lift other than 0 and above -1 (0.02 for +2%)",
        ),
        (["--users", "1"], "--users 1: give at least 2 users per arm"),
        (
            ["--baseline", "inf", "--sd", "1", "--mde", "0.1"],
            "--baseline inf: give a finite number",
        ),
    ],
)
def test_power_targets_are_checked(args: list[str], message: str) -> None:
    base = [] if "--baseline" in args else ["--baseline", "0.05"]
    result = runner.invoke(app, ["power", *base, *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"


@pytest.mark.parametrize(
    "command",
    [
        ["ingest"],
        ["rejects"],
        ["migrate"],
        ["experiments"],
        ["experiment", "set"],
        ["report"],
        ["power"],
        ["demo"],
        ["evaluate"],
        ["forecast"],
    ],
    ids=" ".join,
)
def test_help_names_what_an_option_takes(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    # Options say what they take (FILE, NAME, K,K...), not their Python type.
    assert not re.search(r"--[a-z-]+ <(str|list\[str\])>", result.stdout), result.stdout


def test_names_printed_to_a_terminal_have_control_characters_escaped(tmp_path: Path) -> None:
    hostile = "\x1b]0;pwned\x07"
    events = tmp_path / "e.csv"
    events.write_text(
        "experiment,arm,user_id,ts,event_type\n"
        f'"{hostile}",control,u1,2024-05-01T00:00:00Z,exposure\n'
        f'"{hostile}",treatment,u2,2024-05-01T00:00:00Z,exposure\n',
        encoding="utf-8",
    )
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["ingest", str(events), "--db", db]).exit_code == 0
    listed = runner.invoke(app, ["experiments", "--db", db])
    assert listed.exit_code == 0
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    assert listed.stdout.startswith("\\x1b]0;pwned\\x07  2024-05-01")
    text = runner.invoke(app, ["report", "-e", hostile, "--db", db, "--format", "text"])
    assert text.exit_code == 0, text.output
    assert "\x1b" not in text.stdout and "\x07" not in text.stdout
    assert "experiment \\x1b]0;pwned\\x07" in text.stdout
    missing = runner.invoke(app, ["report", "-e", hostile + "x", "--db", db, "--format", "json"])
    assert missing.exit_code == 1
    assert "\x1b" not in missing.stderr
    assert "\\x1b]0;pwned\\x07x" in missing.stderr


def test_printable_keeps_text_and_escapes_controls() -> None:
    assert printable("ctr für Öl · 5%") == "ctr für Öl · 5%"
    assert printable("a\tb\nc\u200bd\x9b") == "a\\tb\\nc\\u200bd\\x9b"


def test_evaluate_writes_data_to_stdout_or_a_file_and_says_so_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("truth.csv").write_text("user_id,item_id\nu1,a\nu2,b\n")
    Path("recs.csv").write_text("user_id,item_id,rank\nu1,a,1\nu2,a,1\n")
    base = ["evaluate", "-t", "truth.csv", "-r", "recs.csv", "--k", "1", "-m", "precision"]
    Path("out").mkdir()  # -o names a file in a folder that exists (test_output_paths)
    for fmt in ("json", "html"):
        to_stdout = runner.invoke(app, [*base, "--format", fmt, "-o", "-"])
        assert to_stdout.exit_code == 0, to_stdout.output
        assert to_stdout.stderr == ""
        assert not Path("-").exists()
        to_file = runner.invoke(app, [*base, "--format", fmt, "-o", f"out/result.{fmt}"])
        assert to_file.exit_code == 0, to_file.output
        assert to_file.stdout == ""
        assert to_file.stderr == f"wrote out/result.{fmt}\n"
        assert Path(f"out/result.{fmt}").read_text() == to_stdout.stdout
    assert '"precision@1"' in Path("out/result.json").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--min-relevance", "inf"],
            "--min-relevance inf: give a finite relevance grade",
        ),
        (
            ["--min-relevance", "nan"],
            "--min-relevance nan: give a finite relevance grade",
        ),
        (["--resamples", "0"], "--resamples 0: give 1 to 10,000,000"),
        (
            ["--seed", "-1"],
            "--seed -1: give a whole number from 0 to 2**32 - 1",
        ),
        (["--alpha", "1"], "--alpha 1: must be between 0 and 1 (exclusive)"),
    ],
)
def test_evaluate_options_are_checked(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["evaluate", "-t", "t.csv", "-r", "r.csv", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
