"""Timestamps far outside the experiment (a logging error such as year 1 or 9999):
ingest flags them, the report keeps them in the users' totals, leaves them out
of the daily series and counts them in health (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

# Two days of a small experiment, plus one impression dated 9999 and one dated
# year 1 (each of a user in the population, so they count in the totals).
EVENTS = """\
experiment,arm,user_id,ts,event_type,request_id,item_id,position
far,control,c1,2024-05-01T08:00:00,exposure,,,
far,control,c1,2024-05-01T08:01:00,impression,r1,i1,1
far,control,c1,2024-05-01T08:02:00,click,r1,i1,
far,control,c2,2024-05-02T08:00:00,exposure,,,
far,control,c2,2024-05-02T08:01:00,impression,r2,i1,1
far,treatment,t1,2024-05-01T08:00:00,exposure,,,
far,treatment,t1,2024-05-01T08:01:00,impression,r3,i1,1
far,treatment,t1,2024-05-01T08:02:00,click,r3,i1,
far,treatment,t2,2024-05-02T08:00:00,exposure,,,
far,treatment,t2,2024-05-02T08:01:00,impression,r4,i2,1
far,treatment,t2,9999-12-31T00:00:00,impression,r5,i2,1
far,control,c2,0001-01-02T00:00:00,impression,r6,i1,1
"""


def test_far_timestamps_leave_the_daily_series_and_are_counted(tmp_path: Path) -> None:
    (tmp_path / "far.csv").write_text(EVENTS)
    db = str(tmp_path / "far.duckdb")
    ingest = runner.invoke(app, ["ingest", str(tmp_path / "far.csv"), "--db", db])
    assert ingest.exit_code == 0, ingest.output
    assert "2 rows with a timestamp more than 365 days" in ingest.stderr

    base = ["report", "-e", "far", "--db", db, "--control", "control", "--no-offline"]
    result = runner.invoke(app, [*base, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["health"]["events_far_outside"] == 2
    assert sorted({p["day"] for p in doc["daily"]}) == ["2024-05-01", "2024-05-02"]
    # Still in the totals: treatment shows 3 impressions (1 + 2), control 2 (the
    # year-1 one is before c2's exposure, so not an outcome).
    ctr = next(m for m in doc["metrics"] if m["metric"] == "ctr")
    assert (ctr["treatment"]["denominator"], ctr["control"]["denominator"]) == (3, 2)

    text = runner.invoke(app, [*base, "--format", "text"])
    assert (
        "2 events have timestamps far outside the experiment (over a year from its "
        "exposures): left out of the daily series; check ts"
    ) in text.stdout
    page = runner.invoke(app, [*base, "-o", str(tmp_path / "far.html")])
    assert page.exit_code == 0, page.output
    assert "2 with timestamps far outside the experiment" in (tmp_path / "far.html").read_text()
