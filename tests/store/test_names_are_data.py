"""Names are data (issue 25, item 2): an arm named ``bert,v2`` is one arm in the
store, the report and ``experiment set``, on a new store and on a store written
before migration 0007 (whose arm lists were comma-separated)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from abeval.cli import app
from abeval.resources import data_dir
from abeval.store import open_store
from abeval.store.arm_lists import parse_arms
from abeval.store.experiments import get_settings
from abeval.store.ingest import ingest_file
from abeval.store.migrate import Migration, apply

runner = CliRunner()
#: Arms with the characters a separated list or a JSON text could trip on.
ARMS = ["bert,v2", "control", 'q"uote\\d', "tab\tbed", "[x", "é/ü"]


def events(experiment: str = "e1", users: int = 3) -> str:
    rows = ["experiment,arm,user_id,ts,event_type"]
    for arm in ARMS:
        quoted = '"' + arm.replace('"', '""') + '"'
        rows += [
            f"{experiment},{quoted},{ARMS.index(arm)}-{i},2024-05-01,exposure" for i in range(users)
        ]
    return "\n".join(rows) + "\n"


def test_arms_with_separators_are_one_arm_each(tmp_path: Path) -> None:
    csv, db = tmp_path / "e.csv", str(tmp_path / "s.duckdb")
    csv.write_text(events())
    assert runner.invoke(app, ["ingest", str(csv), "--db", db, "-q"]).exit_code == 0
    with open_store(db) as store, store.connect() as conn:
        assert get_settings(conn, "e1").arms == sorted(ARMS)
    split = ",".join(f"{arm}={i + 1}" for i, arm in enumerate(ARMS))  # commas in names too
    result = runner.invoke(
        app, ["experiment", "set", "e1", "--control", "bert,v2", "--split", split, "--db", db]
    )
    assert result.exit_code == 0, result.output
    with open_store(db) as store, store.connect() as conn:
        recorded = get_settings(conn, "e1").split
    total = sum(range(1, len(ARMS) + 1))
    assert recorded == pytest.approx({arm: (i + 1) / total for i, arm in enumerate(ARMS)})
    result = runner.invoke(app, ["report", "-e", "e1", "--db", db, "--format", "json", "-o", "-"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {a["arm"]: a["users"] for a in doc["arms"]} == dict.fromkeys(ARMS, 3)
    assert (doc["settings"]["control"], doc["settings"]["control_rule"]) == ("bert,v2", "recorded")


def test_a_store_before_0007_gets_its_arm_lists_rebuilt(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for step in data_dir("migrations").glob("*.sql"):
        if int(step.name[:4]) < 7:
            shutil.copy(step, old)
    with open_store(str(tmp_path / "s.duckdb"), migrate=False) as store:
        apply(store, old)
        with store.begin() as conn:
            for arm in ARMS:
                conn.execute(
                    text(
                        "INSERT INTO events (experiment, arm, user_id, ts, event_type, ingest_id) "
                        "VALUES ('e1', :a, 'u', '2024-05-01', 'exposure', 1)"
                    ),
                    {"a": arm},
                )
            # As abeval wrote it before 0007: joined with commas, so split wrongly.
            conn.execute(
                text(
                    "INSERT INTO experiments (experiment, arms, updated_at) "
                    "VALUES ('e1', :a, CURRENT_TIMESTAMP), ('e2', 'x', CURRENT_TIMESTAMP)"
                ),
                {"a": ",".join(sorted(ARMS))},
            )
        assert min(m.version for m in apply(store)) == 7  # and the steps after it
        with store.connect() as conn:
            assert get_settings(conn, "e1").arms == sorted(ARMS)
            assert get_settings(conn, "e2").arms == []  # no events: no arms


@pytest.mark.parametrize(
    ("stored", "arms"),
    [
        ('["b,v2","a"]', ["a", "b,v2"]),
        ("a,b", ["a", "b"]),  # a Spark store written before 0007
        ("[x,y", ["[x", "y"]),
        ('["t\tb"]', ["t\tb"]),  # a control character left as it is
        (None, []),
    ],
)
def test_parse_arms(stored: str | None, arms: list[str]) -> None:
    assert parse_arms(stored) == arms


@pytest.mark.postgres
def test_arms_with_separators_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    csv = tmp_path / "e.csv"
    csv.write_text(events())
    with open_store(postgres_database) as store:
        ingest_file(store, csv)
        with store.begin() as conn:  # as a store before 0007 held it: rebuilt by the step
            conn.execute(text("UPDATE experiments SET arms = 'bert,v2,control'"))
            step = Migration(7, "arm_lists", data_dir("migrations") / "0007_arm_lists.sql")
            for statement in step.statements():
                conn.execute(text(statement))
        with store.connect() as conn:
            assert get_settings(conn, "e1").arms == sorted(ARMS)
