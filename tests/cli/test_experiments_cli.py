"""``abeval experiments`` and ``abeval experiment set`` on a small hand-made file."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

EVENTS = """\
experiment,arm,user_id,ts,event_type,request_id,item_id,position,value
home,control,u1,2024-05-01T08:00:00Z,exposure,,,,
home,control,u1,2024-05-01T08:01:00Z,impression,r1,i1,1,
home,control,u1,2024-05-01T08:01:00Z,impression,r1,i2,2,
home,control,u1,2024-05-01T08:02:00Z,click,r1,i1,,
home,control,u2,2024-05-01T09:00:00Z,exposure,,,,
home,treatment,u3,2024-05-02T10:00:00Z,exposure,,,,
home,treatment,u3,2024-05-02T10:05:00Z,purchase,,,,12.5
home,treatment,u1,2024-05-02T11:00:00Z,exposure,,,,
search,a,s1,2024-04-01T00:00:00+02:00,exposure,,,,
search,b,s2,2024-04-03T12:00:00,click,,x,,
"""

LISTING = """\
home  2024-05-01 08:00 UTC .. 2024-05-02 11:00 UTC
  control: 2 users; click 1, exposure 2, impression 2
  treatment: 2 users; exposure 2, purchase 1
  1 user seen in several arms (left out of the analysis)
search  2024-03-31 22:00 UTC .. 2024-04-03 12:00 UTC
  a: 1 user; exposure 1
  b: 1 user; click 1
"""


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABEVAL_DB", raising=False)
    (tmp_path / "events.csv").write_text(EVENTS)
    result = runner.invoke(app, ["ingest", "events.csv", "--db", "s.duckdb", "-q"])
    assert result.exit_code == 0, result.output
    return tmp_path / "s.duckdb"


def invoke(*args: str) -> object:
    return runner.invoke(app, [*args, "--db", "s.duckdb"])


def settings(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT experiment, arms, control_arm, split FROM experiments ORDER BY 1"
        ).fetchall()
    finally:
        con.close()


def test_experiments_text(store: Path) -> None:
    result = invoke("experiments")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == LISTING


def test_experiments_json(store: Path) -> None:
    result = invoke("experiments", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == [
        {
            "experiment": "home",
            "arms": [
                {
                    "arm": "control",
                    "users": 2,
                    "events": {"click": 1, "exposure": 2, "impression": 2},
                },
                {"arm": "treatment", "users": 2, "events": {"exposure": 2, "purchase": 1}},
            ],
            "first_ts": "2024-05-01T08:00:00",
            "last_ts": "2024-05-02T11:00:00",
            "users_in_several_arms": 1,
            "control_arm": None,
            "split": None,
            "source": None,
        },
        {
            "experiment": "search",
            "arms": [
                {"arm": "a", "users": 1, "events": {"exposure": 1}},
                {"arm": "b", "users": 1, "events": {"click": 1}},
            ],
            "first_ts": "2024-03-31T22:00:00",
            "last_ts": "2024-04-03T12:00:00",
            "users_in_several_arms": 0,
            "control_arm": None,
            "split": None,
            "source": None,
        },
    ]


def test_experiments_on_an_empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["migrate", "--db", "s.duckdb"]).exit_code == 0
    result = invoke("experiments")
    assert result.stdout == "no experiments; load events with `abeval ingest FILE`\n"
    assert json.loads(invoke("experiments", "--json").stdout) == []


def test_set_control_and_split(store: Path) -> None:
    result = invoke(
        "experiment", "set", "home", "--control", "control", "--split", "control=1,treatment=3"
    )
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "home: control control; split control=25%, treatment=75%\n"
    assert settings(store)[0] == (
        "home",
        '["control","treatment"]',
        "control",
        '{"control": 0.25, "treatment": 0.75}',
    )
    listing = invoke("experiments").stdout
    assert (
        listing.splitlines()[0]
        == "home  2024-05-01 08:00 UTC .. 2024-05-02 11:00 UTC, control control"
    )
    entry = json.loads(invoke("experiments", "--json").stdout)[0]
    assert (entry["control_arm"], entry["split"]) == (
        "control",
        {"control": 0.25, "treatment": 0.75},
    )
    # One setting at a time keeps the other.
    assert invoke("experiment", "set", "home", "--control", "treatment").exit_code == 0
    assert settings(store)[0][2:] == ("treatment", '{"control": 0.25, "treatment": 0.75}')
    # Settings survive a new ingest that widens the time range.
    (store.parent / "more.csv").write_text(
        "experiment,arm,user_id,ts,event_type\nhome,control,u9,2024-06-01,exposure\n"
    )
    assert invoke("ingest", "more.csv").exit_code == 0
    assert settings(store)[0][2] == "treatment"
    assert invoke("experiments").stdout.splitlines()[0] == (
        "home  2024-05-01 08:00 UTC .. 2024-06-01 00:00 UTC, control treatment"
    )


def test_set_split_only(store: Path) -> None:
    result = invoke("experiment", "set", "search", "--split", "a=50,b=50")
    assert result.stderr == (
        "search: control not recorded (set it with --control ARM); split a=50%, b=50%\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["home", "--control", "treatmnt"],
            "experiment 'home' has no arm 'treatmnt'; did you mean treatment? "
            "its arms are control, treatment",
        ),
        (
            ["home", "--control", "zzz"],
            "experiment 'home' has no arm 'zzz'; its arms are control, treatment",
        ),
        (
            ["hmoe", "--control", "control"],
            "no experiment 'hmoe' in the store; did you mean home? "
            "(list them with `abeval experiments`)",
        ),
        (
            ["checkout", "--control", "control"],
            "no experiment 'checkout' in the store; known: home, search "
            "(list them with `abeval experiments`)",
        ),
        (
            ["home", "--split", "control=50,treatment"],
            "--split 'control=50,treatment': write it as ARM=WEIGHT,... "
            "with positive weights, such as control=50,treatment=50",
        ),
        (
            ["home", "--split", "control=50,treatment=half"],
            "--split 'control=50,treatment=half': write it as ARM=WEIGHT,... "
            "with positive weights, such as control=50,treatment=50",
        ),
        (
            ["home", "--split", "control=0,treatment=100"],
            "--split 'control=0,treatment=100': write it as ARM=WEIGHT,... "
            "with positive weights, such as control=50,treatment=50",
        ),
        (
            ["home", "--split", "control=nan,treatment=1"],
            "--split 'control=nan,treatment=1': write it as ARM=WEIGHT,... "
            "with positive weights, such as control=50,treatment=50",
        ),
        (
            ["home", "--split", "control=1,control=1"],
            "--split 'control=1,control=1': names the arm 'control' twice",
        ),
        (
            ["home", "--split", "control=50"],
            "--split 'control=50': does not match the arms control, treatment (missing: treatment)",
        ),
        (
            ["home", "--split", "control=50,treatment=30,holdout=20"],
            "--split 'control=50,treatment=30,holdout=20': does not match the arms control, "
            "treatment (unknown: holdout)",
        ),
        (
            ["home", "--control", "control", "--split", "control=1,b=1"],
            "--split 'control=1,b=1': does not match the arms control, treatment (unknown: b) "
            "(missing: treatment)",
        ),
    ],
)
def test_set_errors_change_nothing(store: Path, args: list[str], message: str) -> None:
    before = settings(store)
    result = invoke("experiment", "set", *args)
    assert result.exit_code == (2 if message.startswith("--") else 1)  # usage or data error
    assert (result.stdout, result.stderr) == ("", f"Error: {message}\n")
    assert settings(store) == before


def test_set_needs_an_option(store: Path) -> None:
    result = invoke("experiment", "set", "home")
    assert result.exit_code == 2
    assert (
        "give --control, --split, --from, --to, --target-propensities or an option to record"
        in " ".join(result.stderr.split())
    )


def test_set_without_a_store_creates_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["experiment", "set", "home", "--control", "a", "--db", "s.duckdb"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: no store at {tmp_path / 's.duckdb'}; load events first with "
        f"`abeval ingest FILE --db {tmp_path / 's.duckdb'}`\n"
    )
    assert not (tmp_path / "s.duckdb").exists()


def test_set_on_an_empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["migrate", "--db", "s.duckdb"]).exit_code == 0
    result = runner.invoke(app, ["experiment", "set", "home", "--control", "a", "--db", "s.duckdb"])
    assert result.stderr == (
        "Error: no experiment 'home': the store is empty; load events with `abeval ingest FILE`\n"
    )
