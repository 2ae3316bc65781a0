"""``abeval ingest`` on the inputs of issue 11: bytes that are not UTF-8, lines
over the limit, byte-order marks, conflicting event ids, values whose sums would
overflow, misnamed columns, silent normalisation and far timestamps. Each case
from the command line: exit code, the exact message, and the store either
unchanged or holding every row read (inserted, repeated, already stored,
conflicting or rejected)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ingest_store import counts, query, run

from abeval.store.events_format import MAX_ABS_VALUE

HEADER = "experiment,arm,user_id,ts,event_type,value,event_id"
NOTHING = (
    "nothing was loaded from this file; fix the rows or pass --on-error skip to load the good rows"
)

#: The end of the reason for an event type that is neither built in nor an identifier.
TEAM = (
    ", or a lower-case identifier (letters, digits and _, at most 64 characters) "
    "for a team-defined metric"
)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File names in messages are as given: relative to the test's folder."""
    monkeypatch.chdir(tmp_path)


def row(i: int, user: str | None = None) -> str:
    return f"e1,A,{user or f'u{i}'},2024-05-01T10:00:00Z,exposure,,"


def refused(work: Path, name: str, first: str, *options: str) -> None:
    """``abeval ingest name`` exits 1 with ``first`` as its first line and no change."""
    db = work / "store.duckdb"
    before = counts(db)
    result = run("ingest", name, "--db", str(db), *options)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == first
    assert "Traceback" not in result.stderr
    assert counts(db) == before


def skipped(work: Path, name: str) -> dict:
    """``abeval ingest --on-error skip --json name``: exit 0, the summary."""
    result = run("ingest", name, "--db", str(work / "store.duckdb"), "--on-error", "skip", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["files"][0]
    accounted = sum(
        summary[k]
        for k in ("inserted", "repeated_in_file", "already_stored", "conflicts", "rejected")
    )
    assert accounted == summary["rows_read"]
    assert summary["duplicates"] == summary["repeated_in_file"] + summary["already_stored"]
    return summary


def rejected_rows(db: Path) -> list[tuple]:
    return query(db, "SELECT line, column_name, reason FROM rejected_rows ORDER BY line")


# --- defect 1: a byte that is not UTF-8 ------------------------------------------------

NOT_UTF8 = "not valid UTF-8; save the file as UTF-8"


@pytest.mark.parametrize("at", [4, 400], ids=["in the first 8 KB", "past the first 8 KB"])
def test_a_byte_that_is_not_utf8_names_its_line(tmp_path: Path, at: int) -> None:
    lines = [row(i).encode() for i in range(500)]
    lines[at - 2] = row(at, "u\xff").encode("latin-1")  # physical line `at` (header is 1)
    (tmp_path / "e.csv").write_bytes(b"\n".join([HEADER.encode(), *lines]) + b"\n")
    refused(tmp_path, "e.csv", f"Error: e.csv:{at}: {NOT_UTF8} (1 bad row; {NOTHING})")

    summary = skipped(tmp_path, "e.csv")
    assert (summary["rows_read"], summary["inserted"], summary["rejected"]) == (500, 499, 1)
    db = tmp_path / "store.duckdb"
    assert rejected_rows(db) == [(at, None, NOT_UTF8)]
    assert query(db, "SELECT count(*) FROM events WHERE user_id LIKE 'u%'") == [(499,)]
    listed = run("rejects", "--db", str(db))
    assert listed.stdout.splitlines()[0] == f"e.csv:{at}: {NOT_UTF8}"


def test_a_header_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_bytes(b"experiment,arm,user\xe9,ts,event_type\n")
    refused(tmp_path, "e.csv", f"Error: e.csv:1: {NOT_UTF8}")


@pytest.mark.parametrize(
    ("encoding", "name"),
    [
        ("utf-16", "UTF-16"),
        ("utf-32", "UTF-32"),
        ("utf-16-le", "UTF-16LE"),
        ("utf-16-be", "UTF-16BE"),
        ("utf-32-le", "UTF-32LE"),
        ("utf-32-be", "UTF-32BE"),
    ],
)
def test_utf16_and_utf32_files_are_named(tmp_path: Path, encoding: str, name: str) -> None:
    # With a byte-order mark (utf-16, utf-32) or without (-le, -be): the same line.
    (tmp_path / "e.csv").write_text(HEADER + "\n" + row(1) + "\n", encoding=encoding)
    refused(
        tmp_path,
        "e.csv",
        f"Error: e.csv is {name} text; abeval reads UTF-8: convert it with "
        f"`iconv -f {name} -t UTF-8 e.csv > e.utf8.csv`",
    )


def test_a_gzip_compressed_utf16_file_is_named(tmp_path: Path) -> None:
    import gzip

    body = (HEADER + "\n" + row(1) + "\n").encode("utf-16-le")
    (tmp_path / "e.jsonl.gz").write_bytes(gzip.compress(body))
    refused(
        tmp_path,
        "e.jsonl.gz",
        "Error: e.jsonl.gz is UTF-16LE text; abeval reads UTF-8: convert it with "
        "`gzip -dc e.jsonl.gz | iconv -f UTF-16LE -t UTF-8 > e.utf8.jsonl`",
    )


def test_jsonl_line_that_is_not_utf8(tmp_path: Path) -> None:
    good = '{"experiment":"e1","arm":"A","user_id":"%s","ts":"2024-05-01","event_type":"exposure"}'
    body = "\n".join(good % f"u{i}" for i in range(3)).encode()
    body = body.replace(b'"u1"', b'"u\xff"')
    (tmp_path / "e.jsonl").write_bytes(body + b"\n")
    refused(tmp_path, "e.jsonl", f"Error: e.jsonl:2: {NOT_UTF8} (1 bad row; {NOTHING})")
    summary = skipped(tmp_path, "e.jsonl")
    assert (summary["inserted"], summary["rejected"]) == (2, 1)
    assert rejected_rows(tmp_path / "store.duckdb") == [(2, None, NOT_UTF8)]


# --- defect 2: a line over the limit ---------------------------------------------------


@pytest.mark.parametrize(
    ("line", "size"),
    [
        # A 3 MB attribute, then a 12 MB user_id.
        ("e1,A,u2,2024-05-01T10:00:00Z,exposure,,,{}", 3 * 2**20),
        ("e1,A,{},2024-05-01T10:00:00Z,exposure,,,ok", 12 * 2**20),
    ],
    ids=["3 MB attribute", "12 MB user_id"],
)
def test_a_line_over_the_limit_names_the_line_and_the_limit(
    tmp_path: Path, line: str, size: int
) -> None:
    long = line.format("x" * size)
    rows = ["e1,A,u1,2024-05-01T10:00:00Z,exposure,,,ok", long, "e1,A,u3,2024-05-01,exposure,,,ok"]
    (tmp_path / "e.csv").write_text("\n".join([HEADER + ",note", *rows]) + "\n")
    nbytes = len(long.encode())  # without its line break
    reason = (
        f"the line is {nbytes} bytes, over the limit of 2,000,000 bytes a line; check the quoting"
    )
    refused(tmp_path, "e.csv", f"Error: e.csv:3: {reason} (1 bad row; {NOTHING})")
    summary = skipped(tmp_path, "e.csv")
    assert (summary["rows_read"], summary["inserted"], summary["rejected"]) == (3, 2, 1)
    db = tmp_path / "store.duckdb"
    assert rejected_rows(db) == [(3, None, reason)]
    # The raw text kept is cut, with its length.
    (raw,) = query(db, "SELECT raw FROM rejected_rows")[0]
    assert raw.endswith(f" ... ({len(long)} bytes in all)") and len(raw) < 3000


# --- defect 3: JSON Lines starting with a byte-order mark -----------------------------


def jsonl_rows(n: int) -> list[str]:
    return [
        json.dumps(
            {
                "experiment": "e1",
                "arm": "A",
                "user_id": f"u{i}",
                "ts": "2024-05-01T10:00:00Z",
                "event_type": "exposure",
            }
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_jsonl_with_a_leading_byte_order_mark_loads(tmp_path: Path, gz: bool) -> None:
    data = ("\ufeff" + "\n".join(jsonl_rows(3)) + "\n").encode()
    name = "e.jsonl.gz" if gz else "e.jsonl"
    (tmp_path / name).write_bytes(gzip.compress(data) if gz else data)
    result = run("ingest", name, "--db", str(tmp_path / "store.duckdb"))
    assert result.exit_code == 0, result.output
    assert counts(tmp_path / "store.duckdb") == (3, 1, 0)
    assert query(tmp_path / "store.duckdb", "SELECT min(user_id) FROM events") == [("u0",)]


def test_jsonl_with_a_leading_byte_order_mark_and_a_bad_row(tmp_path: Path) -> None:
    rows = jsonl_rows(3)
    rows[1] = rows[1].replace('"exposure"', '"page-view"')
    (tmp_path / "e.jsonl").write_text("\ufeff" + "\n".join(rows) + "\n", encoding="utf-8")
    reason = (
        "unknown event_type 'page-view'; expected one of exposure, impression, click, "
        "purchase, rating" + TEAM
    )
    refused(tmp_path, "e.jsonl", f"Error: e.jsonl:2:event_type: {reason} (1 bad row; {NOTHING})")
    summary = skipped(tmp_path, "e.jsonl")
    assert (summary["inserted"], summary["rejected"]) == (2, 1)
    # The rejected row is really kept.
    assert rejected_rows(tmp_path / "store.duckdb") == [(2, "event_type", reason)]


def test_jsonl_byte_order_mark_mid_file_is_a_bad_row(tmp_path: Path) -> None:
    rows = jsonl_rows(3)
    (tmp_path / "e.jsonl").write_text(
        rows[0] + "\n" + rows[1] + "\n\ufeff" + rows[2] + "\n", encoding="utf-8"
    )
    reason = "the line starts with a byte-order mark (U+FEFF); remove it"
    refused(tmp_path, "e.jsonl", f"Error: e.jsonl:3: {reason} (1 bad row; {NOTHING})")


def test_csv_byte_order_mark_mid_file_is_stripped(tmp_path: Path) -> None:
    """Two CSV files pasted together: the second's byte-order mark starts a line.
    It is trimmed, as spaces are, so no experiment prints like another."""
    (tmp_path / "e.csv").write_text(
        "\n".join([HEADER, row(1), "\ufeff" + row(2)]) + "\n", encoding="utf-8"
    )
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"][0]["trimmed_ids"] == 1
    assert query(tmp_path / "store.duckdb", "SELECT DISTINCT experiment FROM events") == [("e1",)]


# --- defect 9: repeats and conflicts ---------------------------------------------------

PURCHASE = "e1,{arm},{user},2024-05-01T10:00:00Z,purchase,{value},{eid}"


def purchase(eid: str, arm: str = "A", user: str = "u1", value: str = "1") -> str:
    return PURCHASE.format(arm=arm, user=user, value=value, eid=eid)


def test_conflict_within_a_new_file(tmp_path: Path) -> None:
    """Same event_id, different arm, user and value: both rows conflict; neither
    is loaded, and skip keeps both in rejected_rows."""
    rows = [purchase("x1"), purchase("x1", "B", "u2", "2"), purchase("x2"), purchase("x2")]
    (tmp_path / "e.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    reason = (
        "event_id 'x1' is used again in this file with different content; "
        "give each event its own event_id"
    )
    refused(tmp_path, "e.csv", f"Error: e.csv:2:event_id: {reason} (2 bad rows; {NOTHING})")
    db = tmp_path / "store.duckdb"
    result = run("ingest", "e.csv", "--db", str(db), "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[0].startswith(
        "e.csv: 4 rows read: 1 inserted, 1 repeated in the file, 0 already in the store, "
        "2 conflicting, 0 rejected ("
    )
    assert result.stderr.splitlines()[1] == (
        "  2 bad rows kept in rejected_rows (ingest 1); list them with `abeval rejects --ingest 1`"
    )
    assert rejected_rows(db) == [(2, "event_id", reason), (3, "event_id", reason)]
    assert query(db, "SELECT event_id FROM events") == [("x2",)]
    assert query(
        db, "SELECT rows_read, rows_inserted, rows_duplicate, rows_rejected FROM ingests"
    ) == [(4, 1, 1, 2)]


def test_conflict_with_the_store(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    (tmp_path / "a.csv").write_text("\n".join([HEADER, purchase("x1"), purchase("x2")]) + "\n")
    assert run("ingest", "a.csv", "--db", str(db)).exit_code == 0
    rows = [purchase("x1", value="5"), purchase("x2"), purchase("x3")]
    (tmp_path / "b.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    reason = (
        "event_id 'x1' is already in the store (ingest 1) with different content; "
        "give each event its own event_id"
    )
    refused(tmp_path, "b.csv", f"Error: b.csv:2:event_id: {reason} (1 bad row; {NOTHING})")
    summary = skipped(tmp_path, "b.csv")
    assert {k: summary[k] for k in ("inserted", "already_stored", "conflicts", "rejected")} == {
        "inserted": 1,
        "already_stored": 1,
        "conflicts": 1,
        "rejected": 0,
    }
    assert query(db, "SELECT line, column_name, reason FROM rejected_rows") == [
        (2, "event_id", reason)
    ]
    # The stored row is the first one, unchanged.
    assert query(db, "SELECT value FROM events WHERE event_id = 'x1'") == [(1.0,)]


def test_repeats_in_the_file_and_in_the_store_are_counted_apart(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    (tmp_path / "a.csv").write_text("\n".join([HEADER, purchase("x1")]) + "\n")
    assert run("ingest", "a.csv", "--db", str(db)).exit_code == 0
    rows = [purchase("x1"), purchase("x2"), purchase("x2"), purchase("x2"), row(9)]
    (tmp_path / "b.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    result = run("ingest", "b.csv", "--db", str(db))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(
        "b.csv: 5 rows read: 2 inserted, 2 repeated in the file, 1 already in the store, "
        "0 conflicting, 0 rejected ("
    )
    assert counts(db) == (3, 2, 0)


# --- defect 4 (ingest side): values whose sums would overflow --------------------------


@pytest.mark.parametrize("value", ["1e308", "-2e15", "1.0000001e15"])
def test_values_beyond_the_bound_are_bad_rows(tmp_path: Path, value: str) -> None:
    assert float(value) != float("inf") and abs(float(value)) > MAX_ABS_VALUE
    (tmp_path / "e.csv").write_text(
        "\n".join([HEADER, purchase("x1", value=value), purchase("x2")]) + "\n"
    )
    refused(
        tmp_path,
        "e.csv",
        "Error: e.csv:2:value: value must be between -1e15 and 1e15 (so that sums cannot "
        f"overflow), got '{value}' (1 bad row; {NOTHING})",
    )


def test_values_at_the_bound_load_and_their_sums_are_finite(tmp_path: Path) -> None:
    rows = [purchase(f"x{i}", value="1e15", user=f"u{i % 3}") for i in range(50)]
    (tmp_path / "e.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    db = tmp_path / "store.duckdb"
    assert run("ingest", "e.csv", "--db", str(db)).exit_code == 0
    # 50 purchases of 1e15 sum to 5e16, and the sum of squares to 5e31.
    assert query(db, "SELECT sum(value), sum(value * value) FROM events") == [(5e16, 5e31)]


def test_non_finite_values_are_bad_rows(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("\n".join([HEADER, purchase("x1", value="inf")]) + "\n")
    refused(
        tmp_path,
        "e.csv",
        f"Error: e.csv:2:value: value must be a number, got 'inf' (1 bad row; {NOTHING})",
    )


# --- did you mean, for column names ----------------------------------------------------


def test_misnamed_required_columns_get_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("experiment,arm,userid,timestamp,event\ne1,A,u1,2024-05-01,x\n")
    refused(
        tmp_path,
        "e.csv",
        "Error: e.csv:1: missing required columns user_id, ts, event_type (did you mean "
        "'userid' for user_id, 'timestamp' for ts, 'event' for event_type? rename them); "
        "expected experiment, arm, user_id, ts, event_type and optionally request_id, "
        "item_id, position, value, event_id, propensity, propensity_given_above, team",
    )


def test_misnamed_optional_column_is_noted(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text(
        "experiment,arm,user_id,ts,event_type,postion,device\ne1,A,u1,2024-05-01,exposure,3,ios\n"
    )
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[1] == (
        "  column 'postion' is kept as an attribute; did you mean position? "
        "rename it to use it as position"
    )


# --- normalisation made visible, far timestamps ----------------------------------------


def test_normalisation_is_counted_and_look_alike_arms_are_warned_about(tmp_path: Path) -> None:
    rows = [
        "e1,control,u1,2024-05-01,exposure,,",
        "e1,Control,u2,2024-05-01,Exposure,,",
        "e1, control ,u3 ,2024-05-02,EXPOSURE,,",
        "e1,treatment,u4,2024-05-02,exposure,,",
    ]
    (tmp_path / "e.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[1:] == [
        "  1 row had spaces around an id (experiment, arm, user_id, request_id, item_id or "
        "event_id), or a byte-order mark starting the line: trimmed",
        "  2 rows had event_type in capitals: lower-cased",
        "Warning: experiment 'e1': arms 'Control' and 'control' differ only in case or "
        "spaces: they are analysed as different arms; fix the names in the files if they are one",
    ]
    with_json = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"), "--json")
    summary = json.loads(with_json.stdout)["files"][0]
    assert (summary["trimmed_ids"], summary["lowercased_event_types"]) == (1, 2)


def test_look_alike_experiments_are_warned_about(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    (tmp_path / "a.csv").write_text(HEADER + "\nHome Reco,A,u1,2024-05-01,exposure,,\n")
    (tmp_path / "b.csv").write_text(HEADER + "\nhome reco,A,u1,2024-05-01,exposure,,\n")
    assert run("ingest", "a.csv", "--db", str(db)).stderr.count("Warning") == 0
    result = run("ingest", "b.csv", "--db", str(db), "--json")
    assert result.exit_code == 0
    assert result.stderr == (
        "Warning: experiments 'Home Reco' and 'home reco' differ only in case or spaces: they "
        "are analysed as different experiments; fix the names in the files if they are one\n"
    )
    assert json.loads(result.stdout)["files"][0]["warnings"] == [result.stderr[9:-1]]


def test_far_timestamps_are_flagged(tmp_path: Path) -> None:
    rows = [f"e1,A,u{i},2024-05-{1 + i % 9:02d},exposure,," for i in range(20)]
    rows += ["e1,A,x1,0001-01-01,exposure,,", "e1,B,x2,9999-12-31T23:59:59,exposure,,"]
    (tmp_path / "e.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["files"][0]
    assert summary["far_timestamps"] == 2
    assert summary["far_timestamp_range"] == ["0001-01-01 00:00:00", "9999-12-31 23:59:59"]
    assert summary["notes"] == [
        "2 rows with a timestamp more than 365 days from the rest of their experiment "
        "(0001-01-01 00:00:00 .. 9999-12-31 23:59:59); check ts"
    ]
    # They are loaded: the report decides what to do with them.
    assert counts(tmp_path / "store.duckdb") == (22, 1, 0)


def test_timestamps_within_a_year_are_not_flagged(tmp_path: Path) -> None:
    rows = ["e1,A,u1,2024-01-01,exposure,,", "e1,A,u2,2024-12-30,exposure,,"]
    (tmp_path / "e.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert json.loads(result.stdout)["files"][0]["far_timestamps"] == 0


# --- the CLI convention: messages on stderr, data on stdout -----------------------------


def test_json_on_stdout_messages_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("\n".join([HEADER, row(1)]) + "\n")
    result = run("ingest", "e.csv", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["files"][0]["inserted"] == 1
    assert result.stderr == ""
    none = run("rejects", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert (none.exit_code, json.loads(none.stdout), none.stderr) == (0, [], "")


# --- compressed files and the JSON reader's own limit -----------------------------------


def test_gzip_csv_with_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    lines = [row(i).encode() for i in range(5)]
    lines[2] = row(2, "u\xff").encode("latin-1")
    (tmp_path / "e.csv.gz").write_bytes(gzip.compress(b"\n".join([HEADER.encode(), *lines])))
    refused(tmp_path, "e.csv.gz", f"Error: e.csv.gz:4: {NOT_UTF8} (1 bad row; {NOTHING})")
    summary = skipped(tmp_path, "e.csv.gz")
    assert (summary["inserted"], summary["rejected"]) == (4, 1)


def test_zstd_csv_with_a_byte_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """Python cannot read zstd here, so the bad line cannot be located: one line."""
    if shutil.which("zstd") is None:
        pytest.skip("needs the zstd program")
    (tmp_path / "e.csv").write_bytes(
        b"\n".join([HEADER.encode(), row(1).encode(), row(2, "u\xff").encode("latin-1")]) + b"\n"
    )
    subprocess.run(["zstd", "-q", "e.csv", "-o", "e.csv.zst"], check=True)
    refused(
        tmp_path,
        "e.csv.zst",
        "Error: e.csv.zst: some lines are not valid UTF-8 and the bad rows cannot be located "
        "in a zstd file; decompress it, or save it as UTF-8",
    )


def test_jsonl_line_over_the_json_readers_limit(tmp_path: Path) -> None:
    rows = jsonl_rows(2)
    # Over the JSON reader's maximum_object_size (16 MiB): the line is read whole
    # (issue 25: the file was refused without naming the line).
    rows[1] = rows[1].replace('"u1"', '"' + "x" * (33 * 2**20) + '"')
    rows.append(rows[0])
    (tmp_path / "e.jsonl").write_text("\n".join(rows) + "\n")
    result = run("ingest", "e.jsonl", "--db", str(tmp_path / "store.duckdb"), "--json")
    assert result.exit_code == 0, result.output
    [doc] = json.loads(result.stdout)["files"]
    assert (doc["rows_read"], doc["inserted"], doc["repeated_in_file"]) == (3, 2, 1)
