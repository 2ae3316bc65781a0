"""Every row accounted for (issue 25, item 1): a line longer than the readers
take. DuckDB's CSV reader drops a line over about 32 MiB without a word, and its
JSON reader stops the file at one over 16 MiB; abeval finds every such line.
A CSV line over the limit is rejected with its line number and the limit (the
file refused, or the line kept in ``rejected_rows`` with ``--on-error skip``);
a JSON Lines line of any length is loaded. Either way the rows in the file are
the rows inserted plus those rejected."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from ingest_store import run

from abeval.store.ingest.lines import MAX_LINE_BYTES, long_lines

ROWS = 40
LONG_AT = 20  # the data row (0-based) that is long: line 22 of a CSV, 21 of JSONL
MB = 1 << 20


def write(path: Path, megabytes: int) -> int:
    """``ROWS`` events, one of them with an attribute of ``megabytes`` MiB; returns
    the long line's length in bytes. Written in pieces: memory stays small."""
    opener = gzip.open if path.name.endswith(".gz") else open
    piece = "x" * MB
    length = 0
    with opener(path, "wt") as f:  # type: ignore[operator]
        if ".csv" in path.name:
            f.write("experiment,arm,user_id,ts,event_type,note\n")
        for i in range(ROWS):
            arm = "control" if i % 2 else "treatment"
            if ".csv" in path.name:
                head = f"e,{arm},u{i},2024-05-01,exposure,"
                tail = "\n"
            else:
                head = (
                    f'{{"experiment":"e","arm":"{arm}","user_id":"u{i}",'
                    '"ts":"2024-05-01","event_type":"exposure","note":"'
                )
                tail = '"}\n'
            f.write(head)
            if i == LONG_AT:
                length = len(head) + megabytes * MB + len(tail) - 1
                for _ in range(megabytes):
                    f.write(piece)
            else:
                f.write("n")
            f.write(tail)
    return length


def ingest(path: Path, db: Path, *extra: str) -> tuple[int, str, dict]:
    result = run("ingest", str(path), "--db", str(db), "--json", *extra)
    doc = json.loads(result.stdout)["files"][0] if result.exit_code == 0 else {}
    return result.exit_code, result.stderr, doc


def check(path: Path, tmp_path: Path, megabytes: int) -> None:
    length = write(path, megabytes)
    db = tmp_path / f"{path.name}.duckdb"
    if ".csv" in path.name:
        line = LONG_AT + 2
        assert long_lines(path) == [(line, length)]
        code, err, _ = ingest(path, db)
        assert code == 1
        assert err.startswith(
            f"Error: {path}:{line}: the line is {length} bytes, over the limit of "
            f"{MAX_LINE_BYTES:,} bytes a line"
        ), err[:300]
        code, err, doc = ingest(path, db, "--on-error", "skip")
        assert code == 0, err[:300]
        assert (doc["rows_read"], doc["inserted"], doc["rejected"]) == (ROWS, ROWS - 1, 1)
        rejects = run("rejects", "--db", str(db), "--json")
        [reject] = json.loads(rejects.stdout)
        assert reject["line"] == line and "over the limit" in reject["reason"]
    else:
        code, err, doc = ingest(path, db)
        assert code == 0, err[:300]
        assert (doc["rows_read"], doc["inserted"], doc["rejected"]) == (ROWS, ROWS, 0)
        code, err, doc = ingest(path, db, "--on-error", "skip")
        assert (doc["rows_read"], doc["already_stored"]) == (ROWS, ROWS)


def test_a_33_mb_csv_line_is_accounted_for(tmp_path: Path) -> None:
    # Issue 25: "1,999 rows read ... 0 rejected" for 2,000 rows, one of them 40 MB.
    check(tmp_path / "e.csv", tmp_path, 33)


@pytest.mark.slow  # about 5 s an ingest of a 100 MB line
@pytest.mark.parametrize("megabytes", [31, 33, 100])
@pytest.mark.parametrize("name", ["e.csv", "e.csv.gz", "e.jsonl"])
def test_31_and_100_mb_lines_are_accounted_for(tmp_path: Path, name: str, megabytes: int) -> None:
    check(tmp_path / name, tmp_path, megabytes)


def test_long_lines_counts_lines_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "l.txt"
    sizes = [3, 0, 25, 7, 40, 2]  # bytes per line; the last has no line break
    path.write_bytes(b"\n".join(b"y" * n for n in sizes))
    expected = [(i + 1, n) for i, n in enumerate(sizes) if n > 5]
    import abeval.store.ingest.lines as lines

    original = lines._SCAN_CHUNK
    try:
        for chunk in (1, 4, 7, 1 << 20):
            lines._SCAN_CHUNK = chunk
            assert lines.long_lines(path, 5) == expected
    finally:
        lines._SCAN_CHUNK = original


def test_long_lines_of_a_plain_file_agree_with_every_line_measured(tmp_path: Path) -> None:
    """The quick "no long line" answer (it reads a page per ``limit`` bytes) gives
    what measuring every line gives, at and around the limit, with and without a
    last line break."""
    import random

    import abeval.store.ingest.lines as lines

    rng = random.Random(7)
    limit = 50
    for case in range(200):
        sizes = [
            rng.choice([0, 1, limit - 1, limit, limit + 1, rng.randrange(3 * limit)])
            for _ in range(rng.randrange(1, 12))
        ]
        body = b"\n".join(b"y" * n for n in sizes) + (b"\n" if case % 2 else b"")
        path = tmp_path / f"l{case}.txt"
        path.write_bytes(body)
        measured = [(i + 1, n) for i, n in enumerate(sizes) if n > limit]
        assert lines.long_lines(path, limit) == measured, sizes
        assert lines._may_hold_long_line(path, limit) == bool(measured), sizes
