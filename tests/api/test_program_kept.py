"""The program page through the kept summaries (issue 32 item 1): ``abeval
program`` keeps what it computes and reads it back, so a second program reads
no event (every statement is counted) and gives the same numbers to 1e-12; a
``report`` before it leaves that experiment's parts for the program to read, and
a ``report`` after it finds the program's parts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agreement_store import BARE, LIFTS, build_store
from json_close import close
from kept_store import EVENTS, copy_of
from sqlalchemy import event
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from abeval.analysis import session as session_module
from abeval.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(build_store(tmp_path_factory.mktemp("program-kept"), users=400))


@pytest.fixture
def db(history: Path, tmp_path: Path) -> str:
    return copy_of(history, tmp_path)


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every statement any engine runs inside the block."""
    seen: list[str] = []

    def found(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", found)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", found)


@contextmanager
def observed_experiments(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The experiments whose events a session reads inside the block."""
    read: list[str] = []
    real = session_module.observe

    def observe(conn: Any, experiment: str, *args: Any) -> Any:
        read.append(experiment)
        return real(conn, experiment, *args)

    with monkeypatch.context() as m:
        m.setattr(session_module, "observe", observe)
        yield read


def cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_second_program_reads_no_event_and_gives_the_same_numbers(db: str) -> None:
    first = json.loads(cli("program", "--db", db, "-f", "json"))
    with statements() as seen:
        second = json.loads(cli("program", "--db", db, "-f", "json"))
    assert seen  # the listener saw the run's statements
    assert [s for s in seen if EVENTS.search(s)] == []
    assert [r["experiment"] for r in second["store_experiments"]] == sorted({*LIFTS, BARE})
    close(second, first, tol=1e-12)


def test_a_report_and_the_program_read_each_others_kept_parts(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("report", "--experiment", "exp-c", "--db", db, "-f", "json")
    with observed_experiments(monkeypatch) as read:
        cli("program", "--db", db, "-f", "json")
    assert sorted(read) == sorted({*LIFTS, BARE} - {"exp-c"})  # exp-c's parts were kept
    with observed_experiments(monkeypatch) as read:
        cli("report", "--experiment", "exp-d", "--db", db, "-f", "json")
    assert read == []  # the program kept exp-d's parts
