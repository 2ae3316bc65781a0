"""``abeval ingest`` on the inputs users have (issue 22): standard input (``-``
with ``--input-format``), spooled to a temporary file that is removed; the exit
code, the exact line and the store after each."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from ingest_store import counts, query, runner

from abeval.cli import app

HEADER = "experiment,arm,user_id,ts,event_type,value,event_id"
ROWS = [f"e1,A,u{i},2024-05-01T10:00:0{i}Z,exposure,," for i in range(4)]
NOTHING = (
    "nothing was loaded from this file; fix the rows or pass --on-error skip to load the good rows"
)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in the test's folder, with temporary files under ``spool/`` to count them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spool").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spool"))
    return tmp_path


def ingest(data: bytes, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["ingest", *args, "--db", "s.duckdb"], input=data)
    assert list(Path("spool").iterdir()) == []  # the spooled copy is gone
    return result.exit_code, result.stdout, result.stderr


def csv_bytes(rows: list[str]) -> bytes:
    return ("\n".join([HEADER, *rows]) + "\n").encode()


@pytest.mark.parametrize("compress", [False, True])
def test_standard_input_is_read(compress: bool) -> None:
    data = csv_bytes(ROWS)
    code, out, err = ingest(gzip.compress(data) if compress else data, "-", "--input-format", "csv")
    assert (code, out) == (0, "")
    assert err.startswith("-: 4 rows read: 4 inserted, 0 repeated in the file, 0 already in the")
    assert counts(Path("s.duckdb")) == (4, 1, 0)
    assert query(Path("s.duckdb"), "SELECT source FROM ingests") == [("-",)]
    # The same bytes again add nothing (the checksum is the input's).
    code, _, err = ingest(data, "-", "--input-format", "csv")
    assert code == 0 and "4 already in the store" in err
    assert counts(Path("s.duckdb"))[0] == 4


def test_jsonl_from_standard_input_with_the_former_option_name() -> None:
    line = '{"experiment":"e1","arm":"A","user_id":"u%d","ts":"2024-05-01T10:00:00Z",'
    data = "\n".join(line % i + '"event_type":"exposure"}' for i in range(3)).encode()
    code, _, err = ingest(data, "-", "--format", "jsonl")
    assert code == 0, err
    assert counts(Path("s.duckdb")) == (3, 1, 0)


def test_standard_input_needs_its_format() -> None:
    code, out, err = ingest(csv_bytes(ROWS), "-")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "Error: --input-format: standard input has no file name to tell its format by; "
        "give csv, parquet or jsonl"
    ]
    assert counts(Path("s.duckdb"))[:2] == (0, 0)


def test_standard_input_twice_is_a_usage_error() -> None:
    code, _, err = ingest(csv_bytes(ROWS), "-", "-", "--input-format", "csv")
    assert code == 2
    assert "standard input can be read once; give - once" in err
    assert not Path("s.duckdb").exists()


def test_a_bad_row_from_standard_input_is_named_by_its_line() -> None:
    bad = [*ROWS[:2], "e1,A,u9,yesterday,exposure,,", *ROWS[2:]]
    code, out, err = ingest(csv_bytes(bad), "-", "--input-format", "csv")
    assert (code, out) == (1, "")
    assert err.splitlines()[0].startswith("Error: -:4:ts: ")
    assert err.splitlines()[0].endswith(f"(1 bad row; {NOTHING})")
    assert counts(Path("s.duckdb"))[:2] == (0, 0)
    code, _, err = ingest(csv_bytes(bad), "-", "--input-format", "csv", "--on-error", "skip")
    assert code == 0
    assert err.startswith("-: 5 rows read: 4 inserted, 0 repeated in the file, 0 already in")
    assert counts(Path("s.duckdb")) == (4, 1, 1)
    assert query(Path("s.duckdb"), "SELECT line FROM rejected_rows") == [(4,)]


def mixed(rows: list[str], first: str = "\n", other: str = "\r\n") -> bytes:
    """The header and rows, line i ending in ``first`` when i is even, else ``other``."""
    return "".join(
        r + (first if i % 2 == 0 else other) for i, r in enumerate([HEADER, *rows])
    ).encode()


@pytest.mark.parametrize(("first", "other"), [("\n", "\r\n"), ("\r\n", "\n")])
@pytest.mark.parametrize("compress", [False, True])
def test_mixed_line_endings_are_read(first: str, other: str, compress: bool) -> None:
    data = mixed(ROWS, first, other)
    name = "m.csv.gz" if compress else "m.csv"
    Path(name).write_bytes(gzip.compress(data) if compress else data)
    code, out, err = ingest(b"", name)
    assert (code, out) == (0, ""), err
    assert err.startswith(f"{name}: 4 rows read: 4 inserted, 0 repeated in the file, 0 already")
    assert query(Path("s.duckdb"), "SELECT user_id, event_type FROM events ORDER BY user_id") == [
        (f"u{i}", "exposure") for i in range(4)
    ]


def test_mixed_line_endings_with_a_bad_row_name_its_line() -> None:
    rows = [
        *ROWS[:2],
        "e1,A,u9,yesterday,exposure,,",
        ROWS[2],
        "e1,A,u8,2024-05-01,click,,,x",
        ROWS[3],
    ]
    Path("m.csv").write_bytes(mixed(rows))
    code, out, err = ingest(b"", "m.csv")
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0].startswith("Error: m.csv:4:ts: cannot read 'yesterday' as a timestamp")
    assert lines[0].endswith(f"(2 bad rows; {NOTHING})")
    assert lines[1] == "m.csv:6: 8 fields where the header has 7; check the delimiter and quoting"
    assert counts(Path("s.duckdb"))[:2] == (0, 0)
    code, _, err = ingest(b"", "m.csv", "--on-error", "skip")
    assert code == 0
    assert err.startswith("m.csv: 6 rows read: 4 inserted, 0 repeated in the file, 0 already in")
    assert counts(Path("s.duckdb")) == (4, 1, 2)
    assert query(Path("s.duckdb"), "SELECT line FROM rejected_rows ORDER BY line") == [(4,), (6,)]
    assert sorted(p.name for p in Path().iterdir()) == ["m.csv", "s.duckdb", "spool"]


# --- epoch timestamps ---------------------------------------------------------------

EPOCHS = [  # (field, the UTC instant it means), each unit at its range's edges
    ("1740906001", "2025-03-02 09:00:01"),
    ("1740906001.5", "2025-03-02 09:00:01.500000"),
    ("1740906001123", "2025-03-02 09:00:01.123000"),
    ("1740906001123456", "2025-03-02 09:00:01.123456"),
    ("100000000", "1973-03-03 09:46:40"),  # 1e8 s: the lowest epoch read
    ("99999999999", "5138-11-16 09:46:39"),  # just under 1e11 s
    ("100000000000", "1973-03-03 09:46:40"),  # 1e11: milliseconds
    ("100000000000000", "1973-03-03 09:46:40"),  # 1e14: microseconds
    ("2025-03-02T09:00:01Z", "2025-03-02 09:00:01"),  # ISO in the same column
]


@pytest.mark.parametrize("bad_row", [False, True])  # the direct load, and the staged one
def test_epoch_seconds_milliseconds_and_microseconds_are_read_as_utc(bad_row: bool) -> None:
    rows = [f"e1,A,u{i},{ts},exposure,," for i, (ts, _) in enumerate(EPOCHS)]
    if bad_row:
        rows.append("e1,A,bad,yesterday,exposure,,")
    Path("e.csv").write_bytes(csv_bytes(rows))
    code, _, err = ingest(b"", "e.csv", "--on-error", "skip")
    assert code == 0, err
    got = query(
        Path("s.duckdb"),
        "SELECT user_id, strftime(ts, '%Y-%m-%d %H:%M:%S.%f') FROM events ORDER BY user_id",
    )
    expected = sorted(
        (f"u{i}", t if "." in t else t + ".000000") for i, (_, t) in enumerate(EPOCHS)
    )
    assert sorted(got) == expected
    assert counts(Path("s.duckdb")) == (len(EPOCHS), 1, int(bad_row))


def test_json_numbers_are_epochs_too() -> None:
    line = '{"experiment":"e1","arm":"A","user_id":"u%d","ts":%s,"event_type":"exposure"}'
    Path("e.jsonl").write_text(line % (1, "1740906001") + "\n" + line % (2, "1740906001123") + "\n")
    code, _, err = ingest(b"", "e.jsonl")
    assert code == 0, err
    assert sorted(query(Path("s.duckdb"), "SELECT CAST(ts AS VARCHAR) FROM events")) == [
        ("2025-03-02 09:00:01",),
        ("2025-03-02 09:00:01.123",),
    ]


@pytest.mark.parametrize("value", ["1740906001123456789", "20240501", "99999999", "-1740906001"])
def test_a_number_outside_the_epoch_ranges_is_refused(value: str) -> None:
    Path("e.csv").write_bytes(csv_bytes([ROWS[0], f"e1,A,u9,{value},exposure,,"]))
    code, out, err = ingest(b"", "e.csv")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"Error: e.csv:3:ts: cannot read '{value}' as a timestamp: as a number it must be epoch "
        "seconds (1e8 to 1e11), milliseconds (1e11 to 1e14) or microseconds (1e14 to 1e17); "
        f"else use ISO 8601 such as 2024-05-01T12:30:00Z (1 bad row; {NOTHING})"
    ]
    assert counts(Path("s.duckdb"))[:2] == (0, 0)


def test_the_api_reads_a_binary_stream_and_needs_its_format() -> None:
    import io

    import abeval
    from abeval.errors import OptionError

    with abeval.open("s.duckdb") as store:
        with pytest.raises(OptionError) as caught:
            store.ingest(io.BytesIO(csv_bytes(ROWS)))
        assert caught.value.parameter == "input_format"
        assert caught.value.allowed == ("csv", "parquet", "jsonl")
        summary = store.ingest(io.BytesIO(csv_bytes(ROWS)), input_format="csv")
    assert (summary.file, summary.rows_read, summary.inserted) == ("-", 4, 4)
    assert list(Path("spool").iterdir()) == []


@pytest.mark.parametrize("bad_row", [False, True])  # the direct load, and the staged one
@pytest.mark.parametrize(
    ("epoch", "value", "instant"),
    [
        ("s", "20240501", "1970-08-23 06:21:41"),  # refused by magnitude, read when declared
        ("s", "1740906001.25", "2025-03-02 09:00:01.250000"),
        ("ms", "1740906001", "1970-01-21 03:35:06.001000"),  # seconds by magnitude
        ("us", "1740906001123", "1970-01-21 03:35:06.001123"),
    ],
)
def test_a_declared_epoch_unit_reads_every_number_in_it(
    epoch: str, value: str, instant: str, bad_row: bool
) -> None:
    rows = [f"e1,A,u1,{value},exposure,,", "e1,A,u2,2025-03-02T09:00:01Z,exposure,,"]
    if bad_row:
        rows.append("e1,A,bad,yesterday,exposure,,")
    Path("e.csv").write_bytes(csv_bytes(rows))
    code, _, err = ingest(b"", "e.csv", "--epoch", epoch, "--on-error", "skip")
    assert code == 0, err
    got = query(
        Path("s.duckdb"),
        "SELECT user_id, strftime(ts, '%Y-%m-%d %H:%M:%S.%f') FROM events ORDER BY user_id",
    )
    assert got == [("u1", instant if "." in instant else instant + ".000000"),
                   ("u2", "2025-03-02 09:00:01.000000")]  # fmt: skip


def test_an_unknown_epoch_unit_is_a_usage_error() -> None:
    Path("e.csv").write_bytes(csv_bytes(ROWS))
    code, _, err = ingest(b"", "e.csv", "--epoch", "ns")
    assert code == 2
    assert err == "Error: --epoch 'ns': choose one of s, ms, us\n"
    assert not Path("s.duckdb").exists()
