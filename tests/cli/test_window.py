"""The analysis window (docs/metrics.md#analysis-window): ``report --from/--to`` and
``experiment set --from/--to``, online and replayed, with the events left out counted."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from abeval.cli import app
from abeval.resources import data_dir
from abeval.store import open_store
from abeval.store.experiments import get_settings
from abeval.store.migrate import apply
from abeval.store.sql.population import parse_bound

runner = CliRunner()

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"


def _user(arm: str, user: str, day: int, clicks: int, late_purchase: bool = False) -> list[str]:
    """A user exposed at 08:00 on 2024-05-0<day>, two impressions, ``clicks`` clicks;
    with ``late_purchase`` a purchase of 10.0 on the next day."""
    ts = f"2024-05-0{day}T08"
    rows = [f"w,{arm},{user},{ts}:00:00,exposure,,,,"]
    rows += [f"w,{arm},{user},{ts}:01:00,impression,{user}-r,i{p},{p}," for p in (1, 2)]
    rows += [f"w,{arm},{user},{ts}:02:00,click,{user}-r,i{p}," + "," for p in range(1, clicks + 1)]
    if late_purchase:
        rows.append(f"w,{arm},{user},2024-05-0{day + 1}T09:00:00,purchase,{user}-r,i1,,10.0")
    return rows


# Day 1: c1, t1 (c1 buys on day 2). Day 2: c2, c3, t2, t3. Day 3: c4, t4.
ROWS = [
    *_user("control", "c1", 1, 1, late_purchase=True),
    *_user("treatment", "t1", 1, 2),
    *_user("control", "c2", 2, 0),
    *_user("control", "c3", 2, 1),
    *_user("treatment", "t2", 2, 2),
    *_user("treatment", "t3", 2, 1),
    *_user("control", "c4", 3, 2),
    *_user("treatment", "t4", 3, 0),
]
DAY2 = [r for r in ROWS if ",2024-05-02T" in r]  # 4 users × 3–5 events, and c1's purchase


@pytest.fixture
def db(tmp_path: Path) -> str:
    (tmp_path / "w.csv").write_text("\n".join([HEADER, *ROWS]) + "\n")
    path = str(tmp_path / "w.duckdb")
    result = runner.invoke(app, ["ingest", str(tmp_path / "w.csv"), "--db", path, "-q"])
    assert result.exit_code == 0, result.output
    return path


def _json(db: str, *args: str) -> dict:
    result = runner.invoke(app, ["report", "-e", "w", "--db", db, "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ctr(doc: dict) -> tuple[float, float]:
    m = next(m for m in doc["metrics"] if m["metric"] == "ctr")
    return m["control"]["value"], m["treatment"]["value"]


def test_the_window_keeps_only_its_events(db: str) -> None:
    full = _json(db)
    day2 = _json(db, "--from", "2024-05-02", "--to", "2024-05-02")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "reports" / "report.schema.json").read_text())
    jsonschema.validate(day2, schema)
    assert full["health"]["events_outside_window"] == 0
    assert full["settings"]["window_rule"] is None
    s = day2["settings"]
    assert (s["window_from"], s["window_to"], s["window_rule"]) == (
        "2024-05-02T00:00:00",
        "2024-05-03T00:00:00",
        "option",
    )
    h = day2["health"]
    # Inside: day 2's events. c1's purchase on day 2 is inside but c1 was exposed on
    # day 1, so c1 is not in the windowed population (its event is outside it).
    assert h["events"] == len(DAY2)
    assert h["events_outside_window"] == len(ROWS) - len(DAY2)
    assert (h["users_analysed"], h["events_outside_population"]) == (4, 1)
    assert {a["arm"]: a["users"] for a in day2["arms"]} == {"control": 2, "treatment": 2}
    # CTR by hand: control c2, c3: 1 click / 4 impressions; treatment t2, t3: 3 / 4.
    assert _ctr(day2) == (0.25, 0.75)
    # Over all days: control 4 clicks / 8, treatment 5 / 8.
    assert _ctr(full) == (0.5, 0.625)

    # The replay reads the same users: precision counts every user with a list,
    # recall those with a click (full: c1, c3, c4 and t1, t2, t3; day 2: c3 and t2, t3).
    def users(doc: dict, metric: str) -> tuple[int, int]:
        o = next(o for o in doc["offline"] if o["metric"] == metric)
        return o["control_users"], o["treatment_users"]

    assert (users(full, "precision@5"), users(day2, "precision@5")) == ((4, 4), (2, 2))
    assert (users(full, "recall@5"), users(day2, "recall@5")) == ((3, 3), (1, 2))


def test_a_recorded_window_applies_and_an_option_overrides_a_bound(db: str) -> None:
    result = runner.invoke(
        app, ["experiment", "set", "w", "--from", "2024-05-02", "--to", "2024-05-02", "--db", db]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "w: control control (the arm named control); split equal; "
        "window 2024-05-02 00:00 UTC to 2024-05-03 00:00 UTC (excluded)\n"
    )
    recorded = _json(db)
    assert recorded["settings"]["window_rule"] == "recorded"
    assert _ctr(recorded) == (0.25, 0.75)
    # --to overrides the recorded end; the recorded start stays.
    both = _json(db, "--to", "2024-05-04")
    s = both["settings"]
    assert (s["window_from"], s["window_to"], s["window_rule"]) == (
        "2024-05-02T00:00:00",
        "2024-05-05T00:00:00",
        "option and recorded",
    )
    # c2, c3, c4: 3 clicks / 6; t2, t3, t4: 3 / 6.
    assert _ctr(both) == (0.5, 0.5)


def test_text_and_html_state_the_window(db: str, tmp_path: Path) -> None:
    args = ["report", "-e", "w", "--db", db, "--from", "2024-05-02T00:00:00Z", "--to", "2024-05-03"]
    text = runner.invoke(app, [*args, "--format", "text"]).stdout
    outside = len(ROWS) - len([r for r in ROWS if "2024-05-02T" in r or "2024-05-03T" in r])
    assert (
        "window 2024-05-02 00:00 UTC .. 2024-05-04 00:00 UTC (end excluded; option); "
        f"{outside} events outside it not analysed"
    ) in text
    page = tmp_path / "w.html"
    assert runner.invoke(app, [*args, "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert f"(excluded), option; {outside} events outside it are not analysed." in html


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("2024-05-02", False, datetime(2024, 5, 2)),
        ("2024-05-02", True, datetime(2024, 5, 3)),
        ("2024-05-02T10:30:00", True, datetime(2024, 5, 2, 10, 30)),
        ("2024-05-02T12:30:00+02:00", False, datetime(2024, 5, 2, 10, 30)),
        ("2024-05-02T10:30:00Z", False, datetime(2024, 5, 2, 10, 30)),
    ],
)
def test_bounds(text: str, end: bool, expected: datetime) -> None:
    assert parse_bound(text, end=end) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--from", "yesterday"],
            "--from 'yesterday': not a date or timestamp; write it "
            "as 2024-05-01 or 2024-05-01T08:00:00 (UTC unless it has a zone)",
        ),
        (
            ["--to", "2024-13-01"],
            "--to '2024-13-01': not a date or timestamp",
        ),
        (
            ["--from", "2024-05-03", "--to", "2024-05-02"],
            "--to '2024-05-02': must come after --from",
        ),
    ],
)
@pytest.mark.parametrize("command", [["report", "-e", "w"], ["experiment", "set", "w"]])
def test_bad_bounds_are_usage_errors(db: str, command: list[str], args: list[str], message: str):
    result = runner.invoke(app, [*command, *args, "--db", db])
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())
    assert result.stdout == ""
    con = duckdb.connect(db, read_only=True)
    try:
        assert con.execute("SELECT window_from, window_to FROM experiments").fetchall() == [
            (None, None)
        ]
    finally:
        con.close()


def test_an_empty_window_from_a_recorded_bound_is_an_error(db: str) -> None:
    runner.invoke(app, ["experiment", "set", "w", "--from", "2024-05-03", "--db", db])
    result = runner.invoke(app, ["report", "-e", "w", "--db", db, "--to", "2024-05-01"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: --to: the analysis window of 'w' is empty: from 2024-05-03T00:00:00 to "
        "2024-05-02T00:00:00; give an end after the start (the recorded window: "
        "`abeval experiment show w`)"
    )
    result = runner.invoke(app, ["experiment", "set", "w", "--to", "2024-05-01", "--db", db])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: the analysis window of 'w' would be empty: from 2024-05-03T00:00:00 to "
        "2024-05-02T00:00:00; --from must come before --to"
    )


def test_migration_adds_the_window_to_an_older_store(tmp_path: Path) -> None:
    step1 = tmp_path / "step1"
    step1.mkdir()
    shutil.copy(data_dir("migrations") / "0001_initial.sql", step1)
    path = str(tmp_path / "old.duckdb")
    # Rows as step 1's ingest wrote them (today's ingest needs the later steps' columns).
    with open_store(path, migrate=False) as store:
        apply(store, step1)
        with store.begin() as conn:
            for arm, user in (("control", "u1"), ("treatment", "u2")):
                conn.exec_driver_sql(
                    "INSERT INTO events (experiment, arm, user_id, ts, event_type, ingest_id) "
                    "VALUES ('w', ?, ?, TIMESTAMP '2025-03-03 00:00:00', 'exposure', 1)",
                    (arm, user),
                )
            conn.exec_driver_sql(
                "INSERT INTO experiments (experiment, arms, updated_at) "
                "VALUES ('w', 'control,treatment', TIMESTAMP '2025-03-03 00:00:00')"
            )
    # Opening it applies 0002 and keeps the data.
    with open_store(path) as store, store.connect() as conn:
        s = get_settings(conn, "w")
    assert (s.arms, s.window_from, s.window_to) == (["control", "treatment"], None, None)
