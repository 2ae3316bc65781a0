"""Outputs never collide (issue 25, item 7): suggested commands are quoted for
the shell, and a line too long for ``evaluate``'s reader is named by its own line
number (DuckDB's message named the line its sniffer stopped at: line 1)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from ingest_store import run

HOSTILE = "x; touch pwned"


def test_a_suggested_command_is_quoted_for_the_shell(tmp_path: Path) -> None:
    events = tmp_path / "e.csv"
    events.write_text(
        "experiment,arm,user_id,ts,event_type\n"
        f"{HOSTILE},a,u1,2024-05-01,exposure\n{HOSTILE},b,u2,2024-05-01,exposure\n"
    )
    db = str(tmp_path / "s.duckdb")
    assert run("ingest", str(events), "--db", db, "-q").exit_code == 0
    result = run("report", "-e", HOSTILE, "--db", db, "--format", "text", "-o", "-")
    assert result.exit_code == 2  # --control is missing
    command = result.stderr.split("`")[1]
    assert command == f"abeval experiment set {shlex.quote(HOSTILE)} --control ARM"
    assert shlex.split(command)[3] == HOSTILE  # pasted, it names the experiment


@pytest.mark.slow
@pytest.mark.parametrize(("name", "line"), [("big.csv", 2), ("big.jsonl", 2)])
def test_a_long_line_in_an_evaluate_input_is_named_by_its_line(
    tmp_path: Path, name: str, line: int
) -> None:
    path = tmp_path / name
    with path.open("w") as f:
        if name.endswith(".csv"):
            f.write("user_id,item_id\n")
            f.write("u1," + "x" * (50 << 20) + "\n")
        else:
            f.write('{"user_id":"u0","item_id":"a"}\n')
            f.write('{"user_id":"u1","item_id":"' + "x" * (50 << 20) + '"}\n')
    result = run("evaluate", "-t", str(path), "-r", str(path), "--format", "json")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}:{line}: the line is "), result.stderr
