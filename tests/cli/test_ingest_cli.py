"""``abeval ingest`` and ``abeval rejects`` from the command line: every class of bad
input gives exit code 1, one exact ``Error: FILE:LINE:COLUMN: reason`` line on stderr
and leaves the store as it was; ``--on-error skip`` keeps the bad rows aside."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ingest_store import counts, query, run

HEADER = (
    "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,event_id,propensity"
)
GOOD_ROWS = [
    "e1,A,u1,2024-05-01T10:00:00Z,exposure,,,,,,",
    "e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i1,1,,,0.5",
    "e1,A,u1,2024-05-01T10:02:00Z,click,r1,i1,,,,",
    "e1,B,u2,2024-05-01T10:00:00Z,exposure,,,,,,",
    "e1,B,u2,2024-05-01T10:05:00Z,purchase,,i3,,9.5,,",
]
NOTHING_LOADED = (
    "nothing was loaded from this file; fix the rows or pass --on-error skip to load the good rows"
)
ONE_BAD = f"(1 bad row; {NOTHING_LOADED})"
EXPECTED_COLUMNS = (
    "expected experiment, arm, user_id, ts, event_type and optionally "
    "request_id, item_id, position, value, event_id, propensity, propensity_given_above, team"
)

#: The end of the reason for an event type that is neither built in nor an identifier.
TEAM = (
    ", or a lower-case identifier (letters, digits and _, at most 64 characters) "
    "for a team-defined metric"
)


def write_csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the five good rows (one ingest), built once and copied per test."""
    folder = tmp_path_factory.mktemp("template")
    write_csv(folder / "good.csv", GOOD_ROWS)
    result = run("ingest", str(folder / "good.csv"), "--db", str(folder / "store.duckdb"))
    assert result.exit_code == 0, result.output
    assert not (folder / "store.duckdb.wal").exists()
    return folder / "store.duckdb"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loaded_store: Path) -> Path:
    """A working directory holding ``good.csv`` and a store with its five rows loaded."""
    monkeypatch.chdir(tmp_path)
    write_csv(tmp_path / "good.csv", GOOD_ROWS)
    shutil.copy(loaded_store, tmp_path / "store.duckdb")
    assert counts(tmp_path / "store.duckdb") == (5, 1, 0)
    return tmp_path


def assert_rejected(work: Path, name: str, first_line: str) -> None:
    """Ingesting ``name`` fails with exactly ``first_line`` and changes nothing."""
    db = work / "store.duckdb"
    before = counts(db)
    result = run("ingest", name, "--db", "store.duckdb")
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == first_line
    assert "Traceback" not in result.stderr
    assert counts(db) == before


# --- bad rows: one class each, at line 4 between good rows ------------------------------

BAD_ROWS = [
    (
        "e1,A,u3,yesterday,exposure,,,,,,",
        "ts: cannot read 'yesterday' as a timestamp; use ISO 8601 such as 2024-05-01T12:30:00Z",
    ),
    (
        "e1,A,u3,2024-05-01T25:00:00,exposure,,,,,,",
        "ts: cannot read '2024-05-01T25:00:00' as a timestamp; "
        "use ISO 8601 such as 2024-05-01T12:30:00Z",
    ),
    (
        "e1,A,u3,infinity,exposure,,,,,,",
        "ts: cannot read 'infinity' as a timestamp; use ISO 8601 such as 2024-05-01T12:30:00Z",
    ),
    (
        "e1,A,u3,2024-05-01,purchase,,,,12.5€,,",
        "value: value must be a number, got '12.5€'",
    ),
    ("e1,A,u3,2024-05-01,purchase,,,,inf,,", "value: value must be a number, got 'inf'"),
    (
        "e1,A,u3,2024-05-01,impression,r,i,first,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got 'first'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,1,,,high",
        "propensity: propensity must be a probability in (0, 1], got 'high'",
    ),
    (
        "e1,A,u3,2024-05-01,page-view,,,,,,",
        "event_type: unknown event_type 'page-view'; "
        "expected one of exposure, impression, click, purchase, rating" + TEAM,
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,0,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got '0'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,-2,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got '-2'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,1.5,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got '1.5'",
    ),
    # Out of INTEGER range or not finite: flagged, not a crash of the whole load.
    (
        "e1,A,u3,2024-05-01,impression,r,i,3000000000,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got '3000000000'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,inf,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got 'inf'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,nan,,,",
        "position: position must be a whole number >= 1 (1 = top of the list), got 'nan'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,1,,,0",
        "propensity: propensity must be a probability in (0, 1], got '0'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,1,,,1.5",
        "propensity: propensity must be a probability in (0, 1], got '1.5'",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,1,,,-0.1",
        "propensity: propensity must be a probability in (0, 1], got '-0.1'",
    ),
    (
        "e1,A,u3,2024-05-01,purchase,,,,-3,,",
        "value: purchase value must be >= 0, got '-3'",
    ),
    (
        "e1,A,u3,2024-05-01,purchase,,,,,,",
        "value: a purchase needs its revenue in value (0 if unknown)",
    ),
    ("e1,A,u3,2024-05-01,rating,,i,,,,", "value: a rating needs the rating in value"),
    (
        "e1,A,u3,2024-05-01,impression,,i,1,,,",
        "request_id: an impression needs request_id; add it or drop the row",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,,1,,,",
        "item_id: an impression needs item_id; add it or drop the row",
    ),
    (
        "e1,A,u3,2024-05-01,impression,r,i,,,,",
        "position: an impression needs position; add it or drop the row",
    ),
    ("e1,A,u3,2024-05-01,click,r,,,,,", "item_id: a click needs the item_id it was on"),
    (",A,u3,2024-05-01,exposure,,,,,,", "experiment: experiment is empty; every event needs one"),
    ("e1,A,  ,2024-05-01,exposure,,,,,,", "user_id: user_id is empty; every event needs one"),
    # Malformed lines, caught by the CSV reader.
    (
        "e1,A,u3,2024-05-01,exposure,,,,,,,extra",
        " 12 fields where the header has 11; check the delimiter and quoting",
    ),
    (
        "e1,A,u3,2024-05-01,click,r",
        "item_id: 6 fields where the header has 11; check the delimiter and quoting",
    ),
    (
        'e1,A,"u3,2024-05-01,exposure,,,,,,',
        "user_id: a quoted field is not closed, or text follows its closing quote; "
        "check the quoting",
    ),
]


@pytest.mark.parametrize(("row", "reason"), BAD_ROWS, ids=[r[1][:40] for r in BAD_ROWS])
def test_bad_row_loads_nothing(work: Path, row: str, reason: str) -> None:
    write_csv(work / "bad.csv", [*GOOD_ROWS[:2], row, GOOD_ROWS[2]])
    # ``reason`` starts with the column and a colon, or with a space when there is none.
    assert_rejected(work, "bad.csv", f"Error: bad.csv:4:{reason} {ONE_BAD}")


def test_short_row_is_one_bad_row_not_one_per_missing_column(work: Path) -> None:
    write_csv(work / "bad.csv", ["e1,A,u3,2024-05-01,click,r", *GOOD_ROWS])
    result = run("ingest", "bad.csv", "--db", "store.duckdb", "--on-error", "skip", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["files"][0]
    assert (summary["rows_read"], summary["rejected"], summary["inserted"]) == (6, 1, 0)
    assert summary["duplicates"] == 5
    assert query(work / "store.duckdb", "SELECT line, column_name FROM rejected_rows") == [
        (2, "item_id")
    ]


def test_several_bad_rows_are_listed_after_the_first(work: Path) -> None:
    rows = [f"e1,A,u{i},2024-05-01,bogus-{i},,,,,," for i in range(8)]
    write_csv(work / "bad.csv", rows)
    result = run("ingest", "bad.csv", "--db", "store.duckdb")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "Error: bad.csv:2:event_type: unknown event_type 'bogus-0'; expected one of exposure, "
        f"impression, click, purchase, rating{TEAM} (8 bad rows; {NOTHING_LOADED})"
    )
    assert lines[1].startswith("bad.csv:3:event_type: unknown event_type 'bogus-1'")
    assert lines[4].startswith("bad.csv:6:event_type: unknown event_type 'bogus-4'")
    assert lines[5:] == ["... and 3 more bad rows"]


def test_event_type_is_case_insensitive_and_values_are_trimmed(work: Path) -> None:
    write_csv(work / "ok.csv", [" e2 , A ,u9, 2024-05-01 ,Exposure,,,,,,"])
    result = run("ingest", "ok.csv", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert query(
        work / "store.duckdb", "SELECT experiment, arm, event_type FROM events WHERE user_id='u9'"
    ) == [("e2", "A", "exposure")]


# --- line numbers are the file's physical lines ----------------------------------------


def test_line_numbers_count_blank_lines_and_multiline_fields(work: Path) -> None:
    header = HEADER + ",note"
    text = "\n".join(
        [
            header,  # 1
            "e1,A,u1,2024-05-01,exposure,,,,,,,ok",  # 2
            "",  # 3
            'e1,A,u1,2024-05-01,exposure,,,,,,,"two',  # 4
            'lines"',  # 5
            "e1,A,u1,2024-05-01,exposure,,,,,,,x,y",  # 6: too many fields
            "",  # 7
            "e1,A,u1,2024-05-01,exposur-e,,,,,,,z",  # 8: bad event_type
        ]
    )
    (work / "lines.csv").write_text(text + "\n")
    result = run("ingest", "lines.csv", "--db", "store.duckdb")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: lines.csv:6: 13 fields where the header has 12; check the delimiter and quoting "
        f"(2 bad rows; {NOTHING_LOADED})",
        "lines.csv:8:event_type: unknown event_type 'exposur-e'; expected one of exposure, "
        "impression, click, purchase, rating" + TEAM,
    ]
    result = run("ingest", "lines.csv", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert query(work / "store.duckdb", "SELECT line, raw FROM rejected_rows ORDER BY line") == [
        (6, "e1,A,u1,2024-05-01,exposure,,,,,,,x,y"),
        (8, "e1,A,u1,2024-05-01,exposur-e,,,,,,,z"),
    ]


def test_line_numbers_with_literal_and_escaped_quotes(work: Path) -> None:
    """A quote inside an unquoted field is a literal character, ``""`` inside a
    quoted field an escaped quote: neither starts or ends a multi-line field."""
    text = "\n".join(
        [
            HEADER + ",note",  # 1
            'e1,A,u"1,2024-05-01,exposure,,,,,,,5" screen',  # 2: literal quotes
            'e1,A,u2,2024-05-01,exposure,,,,,,,"say ""hi"",',  # 3: opens a field ...
            'and ""bye"""',  # 4: ... closed here
            "e1,A,u3,2024-05-01,exposur-e,,,,,,,x",  # 5
            "e1|x,A,u4,2024-05-01,exposure,,,,,,,y,z",  # 6
        ]
    )
    (work / "q.csv").write_text(text + "\n")
    result = run("ingest", "q.csv", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    db = work / "store.duckdb"
    assert query(db, "SELECT line, raw FROM rejected_rows ORDER BY line") == [
        (5, "e1,A,u3,2024-05-01,exposur-e,,,,,,,x"),
        (6, "e1|x,A,u4,2024-05-01,exposure,,,,,,,y,z"),
    ]
    got = query(
        db, "SELECT user_id, attributes FROM events WHERE attributes IS NOT NULL ORDER BY 1"
    )
    assert [(u, json.loads(a)) for u, a in got] == [
        ('u"1', {"note": '5" screen'}),
        ("u2", {"note": 'say "hi",\nand "bye"'}),
    ]


def test_crlf_line_endings(work: Path) -> None:
    rows = [HEADER, GOOD_ROWS[0], "e1,A,u3,2024-05-01,page-view,,,,,,"]
    (work / "crlf.csv").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    first = (
        "Error: crlf.csv:3:event_type: unknown event_type 'page-view'; expected one of exposure, "
        f"impression, click, purchase, rating{TEAM} {ONE_BAD}"
    )
    assert_rejected(work, "crlf.csv", first)


# --- file-level problems ---------------------------------------------------------------


def test_missing_required_columns(work: Path) -> None:
    (work / "bad.csv").write_text("experiment,Arm,ts,event_type,value\ne1,A,2024-05-01,click,\n")
    assert_rejected(
        work,
        "bad.csv",
        "Error: bad.csv:1: missing required columns arm, user_id (found 'Arm': names are exact "
        f"and lower case); {EXPECTED_COLUMNS}",
    )


def test_missing_one_required_column(work: Path) -> None:
    (work / "bad.csv").write_text("experiment,arm,user_id,event_type\ne1,A,u1,exposure\n")
    assert_rejected(
        work, "bad.csv", f"Error: bad.csv:1: missing required column ts; {EXPECTED_COLUMNS}"
    )


def test_duplicate_and_case_clashing_columns(work: Path) -> None:
    write_csv(work / "dup.csv", [GOOD_ROWS[0] + ",x,y"], HEADER + ",device,device")
    assert_rejected(work, "dup.csv", "Error: dup.csv:1: column 'device' appears twice; rename one")
    write_csv(work / "case.csv", [GOOD_ROWS[0] + ",x,y"], HEADER + ",device,Device")
    assert_rejected(
        work,
        "case.csv",
        "Error: case.csv:1: column 'Device' and 'device' differ only in case; rename one",
    )
    write_csv(work / "noname.csv", [GOOD_ROWS[0] + ",x"], HEADER + ",")
    assert_rejected(
        work,
        "noname.csv",
        "Error: noname.csv:1: column 12 of the header has no name; name it or remove it",
    )


def test_empty_file(work: Path) -> None:
    (work / "empty.csv").write_text("")
    assert_rejected(
        work,
        "empty.csv",
        "Error: empty.csv: the file is empty (0 bytes); "
        "expected a header line with experiment, arm, user_id, ts, event_type",
    )


def test_blank_header_line(work: Path) -> None:
    (work / "blank.csv").write_text("\n" + HEADER + "\n")
    assert_rejected(
        work,
        "blank.csv",
        "Error: blank.csv:1: the header line is empty; "
        "expected experiment, arm, user_id, ts, event_type",
    )


@pytest.mark.parametrize("newline", ["\n", ""])
def test_header_only_file_loads_zero_rows(work: Path, newline: str) -> None:
    (work / "header.csv").write_text(HEADER + newline)
    result = run("ingest", "header.csv", "--db", "store.duckdb", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["files"][0]
    assert (summary["rows_read"], summary["inserted"], summary["status"]) == (0, 0, "ok")
    assert counts(work / "store.duckdb") == (5, 2, 0)


def test_nonexistent_file(work: Path) -> None:
    assert_rejected(work, "missing.csv", "Error: missing.csv: no such file; check the path")


def test_directory(work: Path) -> None:
    (work / "logs").mkdir()
    assert_rejected(work, "logs", "Error: logs: is a directory; name the event files in it")


def test_unknown_extension(work: Path) -> None:
    write_csv(work / "events.xlsx", GOOD_ROWS)
    assert_rejected(
        work,
        "events.xlsx",
        "Error: events.xlsx: cannot tell the format from the extension; "
        "name it .csv, .csv.gz, .parquet or .jsonl, or pass --input-format",
    )
    # --input-format names it (and --format, its former name, still does).
    result = run("ingest", "events.xlsx", "--format", "csv", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(
        "events.xlsx: 5 rows read: 0 inserted, 0 repeated in the file, 5 already in the store, "
        "0 conflicting, 0 rejected ("
    )


def test_unknown_format_option_is_a_usage_error(work: Path) -> None:
    result = run("ingest", "good.csv", "--input-format", "xlsx", "--db", "store.duckdb")
    assert result.exit_code == 2
    assert result.stderr == "Error: --input-format 'xlsx': choose one of csv, parquet, jsonl\n"
    # --format is what ingest writes; the input's former spelling takes only input formats.
    result = run("ingest", "good.csv", "--format", "xlsx", "--db", "store.duckdb")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --format 'xlsx': choose one of text, json (the files' format is --input-format)\n"
    )


def test_unknown_on_error_option_is_a_usage_error(work: Path) -> None:
    result = run("ingest", "good.csv", "--on-error", "ignore", "--db", "store.duckdb")
    assert result.exit_code == 2
    assert result.stderr == "Error: --on-error 'ignore': choose one of abort, skip\n"


def test_gzipped_csv(work: Path) -> None:
    rows = [*GOOD_ROWS, "e1,A,u3,2024-05-01,page-view,,,,,,"]
    with gzip.open(work / "events.csv.gz", "wt") as f:
        f.write("\n".join([HEADER, *rows]) + "\n")
    first = (
        "Error: events.csv.gz:7:event_type: unknown event_type 'page-view'; "
        "expected one of exposure, "
        f"impression, click, purchase, rating{TEAM} {ONE_BAD}"
    )
    assert_rejected(work, "events.csv.gz", first)


def test_tab_separated(work: Path) -> None:
    rows = [r.replace(",", "\t") for r in GOOD_ROWS]
    write_csv(work / "events.tsv", rows, HEADER.replace(",", "\t"))
    result = run("ingest", "events.tsv", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(
        "events.tsv: 5 rows read: 0 inserted, 0 repeated in the file, 5 already in the store, "
        "0 conflicting, 0 rejected ("
    )


# --- JSON Lines ------------------------------------------------------------------------


def jsonl(path: Path, rows: list[dict[str, object] | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def ev(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "experiment": "e1",
        "arm": "A",
        "user_id": "u1",
        "ts": "2024-05-01T10:00:00Z",
        "event_type": "exposure",
    }
    base.update(kw)
    return base


def test_jsonl_bad_row_line_counts_blank_lines(work: Path) -> None:
    jsonl(work / "e.jsonl", [ev(), "", ev(event_type="purchase", value=-1)])
    assert_rejected(
        work,
        "e.jsonl",
        f"Error: e.jsonl:3:value: purchase value must be >= 0, got '-1' {ONE_BAD}",
    )


def test_jsonl_malformed_line(work: Path) -> None:
    jsonl(
        work / "e.jsonl",
        [ev(user_id="u7"), '{"experiment": "e1", oops', "[1, 2]", ev(user_id="u8")],
    )
    db = work / "store.duckdb"
    result = run("ingest", "e.jsonl", "--db", "store.duckdb")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: e.jsonl:2: malformed JSON; each line must be one JSON object "
        f"(2 bad rows; {NOTHING_LOADED})",
        "e.jsonl:3: malformed JSON; each line must be one JSON object",
    ]
    assert counts(db) == (5, 1, 0)
    result = run("ingest", "e.jsonl", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert counts(db) == (7, 2, 2)
    assert query(db, "SELECT line, column_name, raw FROM rejected_rows ORDER BY line") == [
        (2, None, '{"experiment": "e1", oops'),
        (3, None, "[1, 2]"),
    ]


def test_jsonl_row_without_a_required_key(work: Path) -> None:
    row = ev()
    del row["user_id"]
    jsonl(work / "e.jsonl", [ev(), row])
    assert_rejected(
        work,
        "e.jsonl",
        f"Error: e.jsonl:2:user_id: user_id is empty; every event needs one {ONE_BAD}",
    )


def test_jsonl_without_a_required_key_anywhere(work: Path) -> None:
    row = ev()
    del row["ts"]
    jsonl(work / "e.jsonl", [row])
    assert_rejected(
        work, "e.jsonl", f"Error: e.jsonl: missing required column ts; {EXPECTED_COLUMNS}"
    )


def test_jsonl_values_that_mix_numbers_and_strings(work: Path) -> None:
    """A key holding numbers on some lines and strings on others reads as text:
    ids are not quoted, numeric strings are numbers."""
    rows: list[dict[str, object] | str] = [
        ev(user_id=17, event_type="purchase", value="4.5", device="ios"),
        ev(user_id="u2", event_type="purchase", value=3, device=1),
    ]
    jsonl(work / "e.jsonl", rows)
    result = run("ingest", "e.jsonl", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    got = query(
        work / "store.duckdb",
        "SELECT user_id, value, attributes FROM events WHERE event_type = 'purchase' "
        "AND experiment = 'e1' AND arm = 'A' ORDER BY user_id",
    )
    assert got == [("17", 4.5, '{"device":"ios"}'), ("u2", 3.0, '{"device":"1"}')]


def test_jsonl_key_first_seen_late_is_read(work: Path) -> None:
    """The event format's keys are read even when the sampled lines lack them."""
    rows: list[dict[str, object] | str] = [ev(user_id=f"u{i}") for i in range(20_481)]
    rows.append(ev(user_id="late", event_type="purchase", value=7))
    jsonl(work / "e.jsonl", rows)
    result = run("ingest", "e.jsonl", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert query(work / "store.duckdb", "SELECT value FROM events WHERE user_id = 'late'") == [
        (7.0,)
    ]


def test_jsonl_empty_and_no_objects(work: Path) -> None:
    (work / "e.jsonl").write_text("")
    assert_rejected(
        work,
        "e.jsonl",
        "Error: e.jsonl: the file is empty (0 bytes); "
        "expected JSON Lines, one event object per line",
    )
    (work / "n.jsonl").write_text("\n\n")
    assert_rejected(
        work,
        "n.jsonl",
        "Error: n.jsonl: no line holds a JSON object; expected JSON Lines, one object per line "
        "with keys experiment, arm, user_id, ts, event_type",
    )


# --- Parquet ---------------------------------------------------------------------------


def parquet(path: Path, **columns: object) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def test_parquet_bad_row_is_named_by_row_number(work: Path) -> None:
    n = 3
    parquet(
        work / "e.parquet",
        experiment=["e1"] * n,
        arm=["A"] * n,
        user_id=["u1", "u2", "u3"],
        ts=pa.array([dt.datetime(2024, 5, 1, 10, i) for i in range(n)], pa.timestamp("us")),
        event_type=["exposure", "impression", "purchase"],
        request_id=[None, "r1", None],
        item_id=[None, "i1", None],
        position=pa.array([None, 0, None], pa.int64()),
        value=[None, None, 2.0],
    )
    assert_rejected(
        work,
        "e.parquet",
        "Error: e.parquet:row 2:position: position must be a whole number >= 1 "
        f"(1 = top of the list), got '0' {ONE_BAD}",
    )
    result = run("ingest", "e.parquet", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    (raw,) = query(work / "store.duckdb", "SELECT raw FROM rejected_rows")[0]
    assert json.loads(raw)["position"] == "0"
    result = run("rejects", "--db", "store.duckdb")
    assert result.stdout.splitlines()[0] == (
        "e.parquet:row 2:position: position must be a whole number >= 1 "
        "(1 = top of the list), got '0'"
    )


def test_parquet_typed_timestamps_and_numbers(work: Path) -> None:
    plus2 = dt.timezone(dt.timedelta(hours=2))
    parquet(
        work / "e.parquet",
        experiment=["e2", "e2"],
        arm=["A", "B"],
        user_id=pa.array([1, 2], pa.int64()),
        ts=pa.array(
            [dt.datetime(2024, 5, 1, 12, tzinfo=plus2), dt.datetime(2024, 5, 1, 13, tzinfo=plus2)],
            pa.timestamp("us", tz="+02:00"),
        ),
        event_type=["exposure", "purchase"],
        value=pa.array([None, 1.25], pa.float32()),
        device=["ios", "web"],
    )
    result = run("ingest", "e.parquet", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert query(
        work / "store.duckdb",
        "SELECT user_id, ts, value, attributes FROM events WHERE experiment = 'e2' ORDER BY ts",
    ) == [
        ("1", dt.datetime(2024, 5, 1, 10), None, '{"device":"ios"}'),
        ("2", dt.datetime(2024, 5, 1, 11), 1.25, '{"device":"web"}'),
    ]


def test_parquet_file_level_errors(work: Path) -> None:
    parquet(work / "m.parquet", experiment=["e1"], arm=["A"])
    assert_rejected(
        work,
        "m.parquet",
        f"Error: m.parquet: missing required columns user_id, ts, event_type; {EXPECTED_COLUMNS}",
    )
    (work / "junk.parquet").write_bytes(b"this is not parquet")
    assert_rejected(
        work,
        "junk.parquet",
        "Error: junk.parquet: cannot read as parquet: Invalid Input Error: "
        "No magic bytes found at end of file 'junk.parquet'",
    )
    (work / "empty.parquet").write_bytes(b"")
    assert_rejected(
        work,
        "empty.parquet",
        "Error: empty.parquet: the file is empty (0 bytes); expected a Parquet file",
    )


def test_parquet_with_zero_rows(work: Path) -> None:
    parquet(
        work / "z.parquet",
        experiment=pa.array([], pa.string()),
        arm=pa.array([], pa.string()),
        user_id=pa.array([], pa.string()),
        ts=pa.array([], pa.timestamp("us")),
        event_type=pa.array([], pa.string()),
    )
    result = run("ingest", "z.parquet", "--db", "store.duckdb")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("z.parquet: 0 rows read: 0 inserted")


# --- all or nothing --------------------------------------------------------------------


def big_file(path: Path, n: int, bad_lines: dict[int, str]) -> list[str]:
    """``n`` data rows (lines 2..n+1), some replaced by ``bad_lines`` {line: row}."""
    rows = [f"big,{'AB'[i % 2]},u{i},2024-05-01T10:00:00,exposure,,,,,," for i in range(n)]
    for line, row in bad_lines.items():
        rows[line - 2] = row
    write_csv(path, rows)
    return rows


def test_one_bad_row_in_the_middle_loads_nothing(work: Path) -> None:
    big_file(work / "big.csv", 5000, {2501: "big,A,u2499,2024-05-01T10:00:00,exposur-e,,,,,,"})
    assert_rejected(
        work,
        "big.csv",
        "Error: big.csv:2501:event_type: unknown event_type 'exposur-e'; expected one of exposure, "
        f"impression, click, purchase, rating{TEAM} {ONE_BAD}",
    )


def test_skip_loads_the_good_rows_and_keeps_the_bad_ones(work: Path) -> None:
    bad = {
        2501: "big,A,u2499,2024-05-01T10:00:00,exposur-e,,,,,,",
        3000: "big,A,u2998,2024-05-01T10:00:00,exposure,,,,,,,extra",
        4999: "big,A,u4997,someday,exposure,,,,,,",
    }
    big_file(work / "big.csv", 5000, bad)
    db = work / "store.duckdb"
    result = run("ingest", "big.csv", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[0].startswith(
        "big.csv: 5,000 rows read: 4,997 inserted, 0 repeated in the file, "
        "0 already in the store, 0 conflicting, 3 rejected ("
    )
    assert result.stderr.splitlines()[1] == (
        "  3 bad rows kept in rejected_rows (ingest 2); list them with `abeval rejects --ingest 2`"
    )
    assert counts(db) == (5 + 4997, 2, 3)
    assert query(
        db,
        "SELECT ingest_id, file, line, column_name, reason, raw FROM rejected_rows ORDER BY line",
    ) == [
        (
            2,
            "big.csv",
            2501,
            "event_type",
            "unknown event_type 'exposur-e'; expected one of exposure, impression, click, "
            "purchase, rating" + TEAM,
            bad[2501],
        ),
        (
            2,
            "big.csv",
            3000,
            None,
            "12 fields where the header has 11; check the delimiter and quoting",
            bad[3000],
        ),
        (
            2,
            "big.csv",
            4999,
            "ts",
            "cannot read 'someday' as a timestamp; use ISO 8601 such as 2024-05-01T12:30:00Z",
            bad[4999],
        ),
    ]
    (status, read, rejected) = query(
        db, "SELECT status, rows_read, rows_rejected FROM ingests WHERE ingest_id = 2"
    )[0]
    assert (status, read, rejected) == ("partial", 5000, 3)

    listed = run("rejects", "--db", "store.duckdb", "--ingest", "2")
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == [
        "big.csv:2501:event_type: unknown event_type 'exposur-e'; expected one of exposure, "
        "impression, click, purchase, rating" + TEAM,
        f"    {bad[2501]}",
        "big.csv:3000: 12 fields where the header has 11; check the delimiter and quoting",
        f"    {bad[3000]}",
        "big.csv:4999:ts: cannot read 'someday' as a timestamp; use ISO 8601 such as "
        "2024-05-01T12:30:00Z",
        f"    {bad[4999]}",
    ]
    as_json = json.loads(run("rejects", "--db", "store.duckdb", "--json").stdout)
    assert [r["line"] for r in as_json] == [2501, 3000, 4999]
    assert as_json[0]["column"] == "event_type"
    none = run("rejects", "--db", "store.duckdb", "--ingest", "1")
    assert (none.exit_code, none.stdout, none.stderr) == (0, "", "no rejected rows in ingest 1\n")

    # The JSON summary counts them too; a second run adds nothing but new rejects.
    again = run("ingest", "big.csv", "--db", "store.duckdb", "--on-error", "skip", "--json")
    summary = json.loads(again.stdout)["files"][0]
    assert {k: summary[k] for k in ("status", "rows_read", "inserted", "duplicates")} == {
        "status": "partial",
        "rows_read": 5000,
        "inserted": 0,
        "duplicates": 4997,
    }
    assert summary["rejected"] == 3
    assert (summary["already_stored"], summary["repeated_in_file"], summary["conflicts"]) == (
        4997,
        0,
        0,
    )
    assert summary["errors"][0].startswith("big.csv:2501:event_type: unknown event_type")


def test_skip_with_only_bad_rows(work: Path) -> None:
    write_csv(work / "bad.csv", ["e1,A,u1,2024-05-01,page-view,,,,,,"])
    result = run("ingest", "bad.csv", "--db", "store.duckdb", "--on-error", "skip")
    assert result.exit_code == 0
    assert counts(work / "store.duckdb") == (5, 2, 1)


def test_several_files_second_bad(work: Path) -> None:
    """Each file is its own transaction: the first stays loaded, the bad second loads
    nothing, the third is not read; the message says so and how to resume."""
    write_csv(work / "a.csv", ["e3,A,u1,2024-05-01,exposure,,,,,,"])
    write_csv(work / "b.csv", ["e3,A,u2,2024-05-01,exposure,,,,,,", "e3,A,u3,oops,exposure,,,,,,"])
    write_csv(work / "c.csv", ["e3,B,u4,2024-05-01,exposure,,,,,,"])
    db = work / "store.duckdb"
    result = run("ingest", "a.csv", "b.csv", "c.csv", "--db", "store.duckdb")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[0].startswith(
        "a.csv: 1 rows read: 1 inserted, 0 repeated in the file, 0 already in the store, "
        "0 conflicting, 0 rejected ("
    )
    assert result.stderr.splitlines()[1:] == [
        "Error: b.csv:3:ts: cannot read 'oops' as a timestamp; use ISO 8601 such as "
        f"2024-05-01T12:30:00Z {ONE_BAD}",
        "loaded before the error: a.csv",
        "not read: c.csv",
        "after fixing it, run the same command again: files already loaded add nothing",
    ]
    assert query(db, "SELECT user_id FROM events WHERE experiment = 'e3'") == [("u1",)]
    assert counts(db) == (6, 2, 0)
    # Fixed and re-run: a.csv adds nothing, b and c load.
    write_csv(work / "b.csv", ["e3,A,u2,2024-05-01,exposure,,,,,,"])
    result = run("ingest", "a.csv", "b.csv", "c.csv", "--db", "store.duckdb", "--quiet")
    assert (result.exit_code, result.stdout) == (0, "")
    assert counts(db) == (8, 5, 0)
