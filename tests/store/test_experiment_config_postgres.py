"""The saved configuration on PostgreSQL: migration 0008 adds the column, ``experiment
set``/``unset`` keep it there, and the report reads it as on DuckDB."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store import open_store

pytestmark = pytest.mark.postgres

runner = CliRunner()

EVENTS = """\
experiment,arm,user_id,ts,event_type,request_id,item_id,position,value
home,control,u1,2024-05-01T08:00:00Z,exposure,,,,
home,control,u2,2024-05-01T09:00:00Z,exposure,,,,
home,treatment,u3,2024-05-02T10:00:00Z,exposure,,,,
home,treatment,u4,2024-05-02T11:00:00Z,exposure,,,,
"""


def config(url: str) -> object:
    with open_store(url, read_only=True) as store, store.connect() as conn:
        raw = conn.execute(
            text("SELECT config FROM experiments WHERE experiment = 'home'")
        ).scalar()
    return json.loads(raw) if raw else None


def test_postgres_keeps_the_configuration(tmp_path: Path, postgres_database: str) -> None:
    events = tmp_path / "events.csv"
    events.write_text(EVENTS)
    db = ["--db", postgres_database]
    assert runner.invoke(app, ["ingest", str(events), "-q", *db]).exit_code == 0
    args = [
        "--guardrails",
        "impressions_per_user:1.5%",
        "--plan-users",
        "400",
        "--correction",
        "bh",
    ]
    result = runner.invoke(app, ["experiment", "set", "home", *args, *db])
    assert result.exit_code == 0, result.output
    recorded = {
        "guardrails": [{"metric": "impressions_per_user", "margin": 0.015}],
        "correction": "bh",
        "plan_users": 400,
        # The plan stamped against the data it was recorded on (the four exposures
        # above: the last at 2024-05-02 11:00, over two calendar days, 400 not reached).
        "plan_recorded": {
            "data_until": "2024-05-02T11:00:00",
            "days": 2,
            "users": 4,
            "plan_users": 400,
            "plan_days": None,
            "after_data": False,
        },
    }
    kept = config(postgres_database)
    at = kept["plan_recorded"]["recorded_at"]
    assert at.startswith(datetime.now(UTC).strftime("%Y-%m-%d"))  # the clock, not the data
    recorded["plan_recorded"]["recorded_at"] = at
    assert kept == recorded
    # A re-ingest keeps it.
    assert runner.invoke(app, ["ingest", str(events), "-q", *db]).exit_code == 0
    assert config(postgres_database) == recorded
    shown = runner.invoke(app, ["experiment", "show", "home", "--format", "json", *db])
    assert json.loads(shown.stdout)["config"] == recorded
    report = runner.invoke(
        app, ["report", "-e", "home", "--format", "json", "--no-offline", "--no-ope", *db]
    )
    assert report.exit_code == 0, report.output
    s = json.loads(report.stdout)["settings"]
    assert (s["correction"], s["margins"], s["plan_users"]) == (
        "bh",
        {"impressions_per_user": 0.015},
        400,
    )
    assert (s["sources"]["correction"], s["sources"]["alpha"]) == ("record", "default")
    bad = runner.invoke(app, ["experiment", "set", "home", "--plan-users", "0", *db])
    assert bad.exit_code == 2 and config(postgres_database) == recorded
    assert runner.invoke(app, ["experiment", "unset", "home", "--guardrails", *db]).exit_code == 0
    unset = {k: v for k, v in recorded.items() if k != "guardrails"}  # the plan's stamp stays
    assert config(postgres_database) == unset
