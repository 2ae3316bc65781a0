"""``abeval metrics remove NAME`` and ``Store.remove_metric`` (issue 38, item 2):
a recorded metric can be forgotten, and with it whatever it broke; a built-in or
unknown name is one line and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.errors import InputError, NotFoundError

runner = CliRunner()
EVENTS = "experiment,arm,user_id,ts,event_type\n" + "".join(
    f"x,{arm},{arm}{i},2024-05-01T0{j}:00:00,{kind}\n"
    for arm in ("control", "b")
    for i in range(4)
    for j, kind in ((0, "exposure"), (1, "play"))
)
METRICS = """
[plays]
kind = "mean"
event = "play"

[play_rate]
kind = "proportion"
event = "play"
"""


@pytest.fixture
def db(tmp_path: Path) -> str:
    (tmp_path / "e.csv").write_text(EVENTS)
    (tmp_path / "m.toml").write_text(METRICS)
    path = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["ingest", str(tmp_path / "e.csv"), "--db", path]).exit_code == 0
    assert (
        runner.invoke(app, ["metrics", "add", str(tmp_path / "m.toml"), "--db", path]).exit_code
        == 0
    )
    return path


def _recorded(db: str) -> list[str]:
    with abeval.open(db, read_only=True) as store:
        return [m.name for m in store.metrics() if not m.builtin]


def test_a_removed_metric_is_gone_and_the_others_stay(db: str) -> None:
    result = runner.invoke(app, ["metrics", "remove", "plays", "--db", db])
    assert result.exit_code == 0, result.output
    assert result.stdout == "removed metric 'plays' (recorded from m.toml)\n"
    assert _recorded(db) == ["play_rate"]
    report = runner.invoke(app, ["report", "-e", "x", "--primary", "plays", "--db", db])
    assert report.exit_code == 2 and "plays" in report.stderr


def test_the_api_returns_the_metric_as_it_was_recorded(db: str) -> None:
    with abeval.open(db) as store:
        removed = store.remove_metric("play_rate")
    assert (removed.name, removed.kind, removed.source, removed.builtin) == (
        "play_rate",
        "proportion",
        "m.toml",
        False,
    )
    assert _recorded(db) == ["plays"]


@pytest.mark.parametrize(
    ("name", "error", "said"),
    [
        ("ctr", InputError, "'ctr' is a built-in metric"),
        ("plyas", NotFoundError, "no recorded metric 'plyas'; did you mean plays?"),
    ],
)
def test_a_name_that_is_not_recorded_is_one_line_and_changes_nothing(
    db: str, name: str, error: type[Exception], said: str
) -> None:
    result = runner.invoke(app, ["metrics", "remove", name, "--db", db])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {said}") and result.stderr.count("\n") == 1
    with abeval.open(db) as store, pytest.raises(error):
        store.remove_metric(name)
    assert _recorded(db) == ["play_rate", "plays"]
