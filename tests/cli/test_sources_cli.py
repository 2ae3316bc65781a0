"""``abeval source add|list|remove`` on a small hand-made table: exit codes, exact
messages and what the store holds after each command."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

LAKE = """\
exp,variant,uid,event_time,kind,req,item_id,pos
home,control,u1,2024-05-01T08:00:00,exposure,,,
home,control,u1,2024-05-01T08:01:00,view,r1,i1,1
home,control,u1,2024-05-01T08:02:00,clk,r1,i1,
home,treatment,u2,2024-05-01T09:00:00,exposure,,,
home,treatment,u2,2024-05-01T09:01:00,scroll,,,
"""
MAP = "arm=variant,user_id=uid,ts=event_time,event_type=kind,request_id=req,position=pos"
ADD = [
    "source", "add", "lake", "--table", "lake.events", "--experiment-column", "exp",
    "--map", MAP, "--event-type", "impression=view,click=clk", "--db", "s.duckdb",
]  # fmt: skip
COLUMNS = "exp, variant, uid, event_time, kind, req, item_id, pos"
MAPPING = {
    "columns": {
        "arm": "variant",
        "event_type": "kind",
        "experiment": "exp",
        "position": "pos",
        "request_id": "req",
        "ts": "event_time",
        "user_id": "uid",
    },
    "event_types": {"clk": "click", "view": "impression"},
    "experiment": None,
    "attributes": {},
}
ADDED = """\
added source 'lake': lake.events, read in place
  home: 4 events
  1 row of event types that map to nothing, not analysed: scroll 1 (map them with \
--event-type TYPE=VALUE)
"""


def invoke(*args: str) -> object:
    return runner.invoke(app, list(args))


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with the table ``lake.events`` (columns of :data:`LAKE`) and no source."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABEVAL_DB", raising=False)
    (tmp_path / "lake.csv").write_text(LAKE)
    assert runner.invoke(app, ["migrate", "--db", "s.duckdb"]).exit_code == 0
    con = duckdb.connect("s.duckdb")
    try:
        con.execute("CREATE SCHEMA lake")
        con.execute("CREATE TABLE lake.events AS SELECT * FROM read_csv('lake.csv')")
    finally:
        con.close()
    return tmp_path / "s.duckdb"


def sources(db: Path) -> list[tuple[str, str, dict[str, object]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name, table_ref, mapping FROM sources ORDER BY 1").fetchall()
    finally:
        con.close()
    return [(r[0], r[1], json.loads(r[2])) for r in rows]


def test_add_list_remove(store: Path) -> None:
    added = runner.invoke(app, ADD)
    assert (added.exit_code, added.stdout, added.stderr) == (0, "", ADDED)
    assert sources(store) == [("lake", "lake.events", MAPPING)]

    listed = runner.invoke(app, ["source", "list", "--db", "s.duckdb"])
    assert (listed.exit_code, listed.stderr) == (0, "")
    assert listed.stdout == (
        "lake  lake.events\n"
        "  arm=variant, event_type=kind, experiment=exp, position=pos, request_id=req, "
        "ts=event_time, user_id=uid; event types click=clk, impression=view\n"
    )
    as_json = json.loads(
        runner.invoke(app, ["source", "list", "--json", "--db", "s.duckdb"]).stdout
    )
    assert [(s["name"], s["table"], s["mapping"]) for s in as_json] == [
        ("lake", "lake.events", MAPPING)
    ]
    (listed_json,) = as_json
    assert list(listed_json) == ["name", "table", "mapping", "created_at", "updated_at"]
    created = datetime.fromisoformat(listed_json["created_at"])
    assert created <= datetime.fromisoformat(listed_json["updated_at"])

    experiments = runner.invoke(app, ["experiments", "--db", "s.duckdb"])
    assert (experiments.exit_code, experiments.stderr) == (0, "")
    assert experiments.stdout == (
        "home  2024-05-01 08:00 UTC .. 2024-05-01 09:00 UTC, read in place from source lake\n"
        "  control: 1 user; click 1, exposure 1, impression 1\n"
        "  treatment: 1 user; exposure 1\n"
    )

    removed = runner.invoke(app, ["source", "remove", "lake", "--db", "s.duckdb"])
    assert (removed.exit_code, removed.stdout) == (0, "")
    assert removed.stderr == "removed source 'lake' (lake.events is not touched)\n"
    assert sources(store) == []
    again = runner.invoke(app, ["source", "remove", "lake", "--db", "s.duckdb"])
    assert again.exit_code == 1
    assert again.stderr == "Error: no source 'lake' (list them with `abeval source list`)\n"
    empty = runner.invoke(app, ["source", "list", "--db", "s.duckdb"])
    assert empty.stdout == (
        "no sources; read a table in place with `abeval source add NAME --table T`\n"
    )


def test_a_name_is_added_once_unless_replaced(store: Path) -> None:
    assert runner.invoke(app, ADD).exit_code == 0
    twice = runner.invoke(app, [*ADD[:-2], "--db", "s.duckdb"])
    assert twice.exit_code == 1
    assert twice.stderr == (
        "Error: a source named 'lake' exists (table lake.events); pass --replace to replace "
        "its mapping, or choose another name\n"
    )
    replaced = runner.invoke(
        app, [*ADD, "--event-type", "impression=view,click=clk,click=scroll", "--replace"]
    )
    assert replaced.exit_code == 0, replaced.output
    assert replaced.stderr == (
        "replaced source 'lake': lake.events, read in place\n  home: 5 events\n"
    )
    mapping = {**MAPPING, "event_types": {"clk": "click", "scroll": "click", "view": "impression"}}
    assert sources(store) == [("lake", "lake.events", mapping)]
    misspelt = runner.invoke(app, ["source", "remove", "laek", "--db", "s.duckdb"])
    assert misspelt.stderr == (
        "Error: no source 'laek'; did you mean lake? (list them with `abeval source list`)\n"
    )


def _without(option: str) -> list[str]:
    i = ADD.index(option)
    return ADD[:i] + ADD[i + 2 :]


BAD = [
    (
        ["--map", MAP.replace("uid", "uidd")],
        1,
        "source 'lake': lake.events has no column 'uidd' (--map user_id=uidd); did you mean "
        f"uid? its columns are {COLUMNS}",
    ),
    (
        ["--map", MAP.replace("position=pos", "position=event_time")],
        1,
        "source 'lake': lake.events: column 'event_time' is TIMESTAMP, and position needs "
        "whole numbers; map another column, or cast it in a view",
    ),
    (
        ["--map", MAP.replace("ts=event_time", "ts=kind")],
        1,
        "source 'lake': lake.events: column 'kind' is VARCHAR, and ts needs a timestamp or a "
        "date; cast it in a view (CREATE VIEW ... AS SELECT CAST(kind AS TIMESTAMP) ...)",
    ),
    (
        ["--map", MAP + ",userid=uid"],
        2,
        "--map 'userid=uid': 'userid' is not a field of the event format; did you mean "
        "user_id? the fields are experiment, arm, user_id, ts, event_type, request_id, "
        "item_id, position, value, event_id, propensity, propensity_given_above, team",
    ),
    (
        ["--map", MAP + ",arm=exp"],
        2,
        f"--map {(MAP + ',arm=exp')!r}: names the field arm twice; keep one",
    ),
    (
        ["--map", "user_id"],
        2,
        "--map 'user_id': write it as FIELD=COLUMN,..., such as user_id=uid,ts=event_time",
    ),
    (
        ["--event-type", "impresion=view"],
        2,
        "--event-type 'impresion=view': 'impresion' is not an event type; did you mean "
        "impression? the types are exposure, impression, click, purchase, rating",
    ),
    (
        ["--event-type", "impression=view,click=view"],
        2,
        "--event-type 'impression=view,click=view': maps 'view' to both impression and click; "
        "keep one",
    ),
    (
        ["--event-type", "purchase=buy"],
        0,
        "",
    ),
    (
        ["--table", "lake.missing"],
        1,
        "source 'lake': no table or view lake.missing in the store's database (--table); "
        "name it as SCHEMA.TABLE, or name Parquet/CSV files by their path",
    ),
    (
        ["--table", "events"],
        1,
        "source 'lake': --table events is abeval's own table; name the table that holds "
        "your events",
    ),
    (
        ["--table", "lake.events; DROP TABLE sources"],
        1,
        "source 'lake': --table 'lake.events; DROP TABLE sources' is neither a table name nor "
        "Parquet/CSV files; write SCHEMA.TABLE (double-quote a part with other characters: "
        'lake."my events") or a path such as data/*.parquet',
    ),
    (
        ["--attributes", "country"],
        1,
        "source 'lake': lake.events has no column 'country' (--attributes country=country); "
        f"its columns are {COLUMNS}",
    ),
]


@pytest.mark.parametrize(("extra", "code", "message"), BAD)
def test_a_bad_mapping_is_one_line_and_records_nothing(
    store: Path, extra: list[str], code: int, message: str
) -> None:
    args = list(ADD)
    for option, value in zip(extra[::2], extra[1::2], strict=True):
        args = _without(option) if option in args else args
        args = [*args, option, value]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    if code:
        assert result.stderr == f"Error: {message}\n"
        assert sources(store) == []
    else:  # purchase=buy names a value the table lacks: fine, the others keep their names
        assert sources(store)[0][2]["event_types"] == {"buy": "purchase"}


def test_usage_errors_and_bad_names(store: Path) -> None:
    both = runner.invoke(app, [*ADD, "--experiment", "home"])
    assert both.exit_code == 2
    assert "a table has an experiment column or one experiment, not both" in both.stderr
    twice = runner.invoke(app, [*ADD, "--map", MAP + ",experiment=exp"])
    assert twice.exit_code == 2
    assert "give the experiment column once" in twice.stderr
    name = runner.invoke(app, ["source", "add", "a b", *ADD[3:]])
    assert name.exit_code == 1
    assert name.stderr == (
        "Error: cannot use 'a b' as a source name; use letters, digits, _ . - (at most 64, "
        "starting with a letter or digit), such as lake-events\n"
    )
    files = runner.invoke(app, [*_without("--table"), "--table", "nowhere/*.parquet"])
    assert files.exit_code == 1
    assert files.stderr == (
        f"Error: source 'lake': no file matches --table {Path.cwd()}/nowhere/*.parquet; check "
        "the path (a glob such as data/*.parquet works)\n"
    )
    assert sources(store) == []


def test_no_experiment_column(store: Path) -> None:
    result = runner.invoke(app, _without("--experiment-column"))
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: source 'lake': lake.events has no column for experiment; name it with "
        "--experiment-column COLUMN, or --experiment NAME for a table of one experiment "
        f"(its columns are {COLUMNS})\n"
    )
    one = runner.invoke(app, [*_without("--experiment-column"), "--experiment", "solo"])
    assert one.exit_code == 0, one.output
    assert "  solo: 4 events\n" in one.stderr
    assert sources(store)[0][2]["experiment"] == "solo"


def test_settings_of_a_source_experiment_are_refused(store: Path) -> None:
    assert runner.invoke(app, ADD).exit_code == 0
    result = runner.invoke(
        app, ["experiment", "set", "home", "--control", "control", "--db", "s.duckdb"]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: experiment 'home' is read in place from source 'lake', and its settings are "
        "not recorded; pass --control, --from and --to to `abeval report` instead\n"
    )
    unknown = runner.invoke(app, ["experiment", "set", "hme", "--control", "a", "--db", "s.duckdb"])
    assert unknown.stderr == (
        "Error: no experiment 'hme' in the store; did you mean home? "
        "(list them with `abeval experiments`)\n"
    )


def test_a_report_reads_a_source_with_no_saved_configuration(store: Path) -> None:
    """The report of an experiment read in place reads its saved configuration
    (none: a source's experiments cannot record one) from the source's view, which
    once had no ``config`` column: a traceback instead of the report."""
    assert runner.invoke(app, ADD).exit_code == 0
    args = ["report", "-e", "home", "--db", "s.duckdb", "-f", "json", "-o", "-"]
    result = runner.invoke(app, [*args, "--no-offline", "--no-ope"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["experiment"] == "home"
    assert set(report["settings"]["sources"].values()) == {"default"}
