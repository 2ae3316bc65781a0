"""No traceback on accepted values (issue 38, item 8, in part): the CUPED
pre-period is bounded where it is accepted (one line naming the bound; a
recorded 10^11 days overflowed the engine's timestamp arithmetic in every
report), and output to a full device, by ``-o`` or by standard output, is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ingest_store import simulated_store
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()
EXPERIMENT = "home-reco-v2"
FULL = Path("/dev/full")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return simulated_store(tmp_path_factory.mktemp("bounds"), users=300, seed=2)


@pytest.mark.parametrize("days", ["3651", "100000000000"])
@pytest.mark.parametrize(
    "command", [["experiment", "set", EXPERIMENT], ["report", "-e", EXPERIMENT, "-f", "json"]]
)
def test_a_cuped_period_past_the_bound_is_refused_in_one_line(
    db: str, command: list[str], days: str
) -> None:
    result = runner.invoke(app, [*command, "--cuped-days", days, "--db", db])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: --cuped-days {days}") and (
        "3,650" in line or "0 or more" in line
    )


def test_the_longest_cuped_period_accepted_gives_a_report(db: str) -> None:
    result = runner.invoke(
        app, ["report", "-e", EXPERIMENT, "-f", "json", "--cuped-days", "3650", "--db", db]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_a_full_device_is_one_line_by_o_and_by_stdout(db: str) -> None:
    report = [sys.executable, "-m", "abeval", "report", "-e", EXPERIMENT, "-f", "json"]
    by_o = subprocess.run(
        [*report, "--db", db, "-o", str(FULL)], capture_output=True, text=True, check=False
    )
    assert by_o.returncode == 1
    assert by_o.stderr == f"Error: cannot write {FULL}: No space left on device\n"
    with FULL.open("w") as full:
        by_stdout = subprocess.run(
            [*report, "--db", db], stdout=full, stderr=subprocess.PIPE, text=True, check=False
        )
    assert by_stdout.returncode == 1
    assert by_stdout.stderr == "Error: cannot write to standard output: No space left on device\n"
