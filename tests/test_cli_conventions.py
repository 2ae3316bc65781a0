"""Conventions every command keeps: --version, choices listed in --help, usage
errors with exit code 2."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from abeval import __version__
from abeval.cli import app

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
        ("ingest", "--format", "<csv|parquet|jsonl>"),
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
        (["report", "-e", "x", "--format", "txt"], "'txt' is not one of 'html', 'json', 'text'"),
        (["report", "-e", "x", "--correction", "bonferroni"], "is not one of 'holm', 'bh'"),
        (["report", "-e", "x", "--k", "0"], "give cutoffs of at least 1"),
        (["report", "-e", "x", "--alpha", "2"], "alpha must be between 0 and 1"),
    ],
)
def test_usage_errors_exit_with_2_before_touching_the_store(
    args: list[str], message: str, tmp_path: object
) -> None:
    result = runner.invoke(app, [*args, "--db", "no-such-store.duckdb"])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
