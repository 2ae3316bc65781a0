"""``ingest_file``: idempotence, timestamps, attributes, counts against the source
(property test) and atomicity when an ingest fails or its process is killed."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from abeval.cli.app import option_name
from abeval.errors import InputError, OptionError
from abeval.store import Database, open_store
from abeval.store.ingest import detect_format, ingest_file
from abeval.store.ingest import record as ingest_module
from abeval.store.ingest.locate import format_error
from abeval.store.ingest.repeats import may_repeat

HEADER = (
    "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,event_id,propensity"
)
ROWS = [
    "e1,A,u1,2024-05-01T10:00:00Z,exposure,,,,,,",
    "e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i1,1,,,0.5",
    "e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i2,2,,,0.25",
    "e1,A,u1,2024-05-01T10:02:00Z,click,r1,i1,,,,",
    "e1,B,u2,2024-05-01T10:00:00Z,exposure,,,,,,",
    "e1,B,u2,2024-05-01T10:05:00Z,purchase,,i3,,9.5,,",
]


def write_csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@pytest.fixture
def store() -> Iterator[Database]:
    s = open_store("duckdb:///:memory:")
    yield s
    s.close()


def scalar(store: Database, sql: str) -> object:
    with store.connect() as conn:
        return conn.execute(text(sql)).scalar()


def rows(store: Database, sql: str) -> list[tuple[object, ...]]:
    with store.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql)).fetchall()]


def state(store: Database) -> tuple[object, ...]:
    """Everything an ingest may change, as counts."""
    return tuple(
        scalar(store, f"SELECT count(*) FROM {t}")
        for t in ("events", "ingests", "rejected_rows", "experiments")
    )


# --- idempotence -----------------------------------------------------------------------


@pytest.mark.parametrize("with_event_id", [False, True])
def test_ingesting_a_file_twice_adds_nothing(
    store: Database, tmp_path: Path, with_event_id: bool
) -> None:
    data = [
        r.rsplit(",", 2)[0] + f",ev{i}," + r.rsplit(",", 1)[1] if with_event_id else r
        for i, r in enumerate(ROWS)
    ]
    path = write_csv(tmp_path / "events.csv", data)
    first = ingest_file(store, path)
    assert (first.rows_read, first.inserted, first.duplicates, first.rejected) == (6, 6, 0, 0)
    events = rows(store, "SELECT * EXCLUDE (ingest_id) FROM events ORDER BY ALL")
    if with_event_id:
        assert {e[9] for e in events} == {f"ev{i}" for i in range(6)}
        assert all(e[12] is None for e in events)  # row_key only without event_id
    else:
        assert all(str(e[12]).startswith("h:") for e in events)
    second = ingest_file(store, path)
    assert (second.rows_read, second.inserted, second.duplicates, second.status) == (6, 0, 6, "ok")
    assert state(store) == (6, 2, 0, 1)
    assert rows(store, "SELECT * EXCLUDE (ingest_id) FROM events ORDER BY ALL") == events
    assert rows(store, "SELECT rows_inserted, rows_duplicate FROM ingests ORDER BY 1") == [
        (0, 6),
        (6, 0),
    ]


def test_same_rows_in_another_file_and_format_are_duplicates(
    store: Database, tmp_path: Path
) -> None:
    """Identity is the row's content, not the file or its layout: another column
    order, another way of writing the same instant and number, JSON Lines or Parquet."""
    write_csv(tmp_path / "a.csv", [r + ",ios,de" for r in ROWS], HEADER + ",device,country")
    assert ingest_file(store, tmp_path / "a.csv").inserted == 6

    # Columns reversed; 'Z' written as +00:00, 9.5 as 9.50, position 1 as 1.0.
    names = [*HEADER.split(","), "device", "country"]
    with (tmp_path / "b.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names[::-1])
        for r in ROWS:
            fields = [*r.split(","), "ios", "de"]
            fields[3] = fields[3].replace("Z", "+00:00")
            fields[8] = "9.50" if fields[8] == "9.5" else fields[8]
            fields[7] = "1.0" if fields[7] == "1" else fields[7]
            w.writerow(fields[::-1])
    b = ingest_file(store, tmp_path / "b.csv")
    assert (b.inserted, b.duplicates) == (0, 6)

    records = [dict(zip(names, [*r.split(","), "ios", "de"], strict=True)) for r in ROWS]
    (tmp_path / "c.jsonl").write_text(
        "\n".join(json.dumps({k: v for k, v in r.items() if v}) for r in records) + "\n"
    )
    c = ingest_file(store, tmp_path / "c.jsonl")
    assert (c.inserted, c.duplicates) == (0, 6)

    table = pa.table({k: [r[k] or None for r in records] for k in names})
    pq.write_table(table, tmp_path / "d.parquet")
    d = ingest_file(store, tmp_path / "d.parquet")
    assert (d.inserted, d.duplicates) == (0, 6)
    assert state(store) == (6, 4, 0, 1)


def test_duplicate_rows_within_a_file_are_loaded_once(store: Database, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "dup.csv", [*ROWS, *ROWS[:3], ROWS[0]])
    s = ingest_file(store, path)
    assert (s.rows_read, s.inserted, s.duplicates) == (10, 6, 4)
    assert scalar(store, "SELECT count(*) FROM events") == 6


def test_overlap_with_the_store_and_repeats_in_the_file_together(
    store: Database, tmp_path: Path
) -> None:
    """Rows already stored and rows repeated in the file, in one file, beside
    another experiment the file does not touch."""
    other = [r.replace("e1,", "e9,", 1) for r in ROWS]
    ingest_file(store, write_csv(tmp_path / "first.csv", [*ROWS[:2], *other]))
    again = [ROWS[0], ROWS[1], ROWS[2], ROWS[2], ROWS[3], ROWS[3], ROWS[3], ROWS[4], ROWS[5]]
    s = ingest_file(store, write_csv(tmp_path / "second.csv", again))
    # ROWS[0:2] are stored already; ROWS[2] once and ROWS[3] twice are repeats.
    assert (s.rows_read, s.inserted, s.duplicates) == (9, 4, 5)
    assert scalar(store, "SELECT count(*) FROM events WHERE experiment = 'e1'") == 6
    assert scalar(store, "SELECT count(*) FROM events WHERE experiment = 'e9'") == 6
    assert rows(store, "SELECT ingest_id, count(*) FROM events GROUP BY 1 ORDER BY 1") == [
        (1, 8),
        (2, 4),
    ]


def test_a_clean_file_and_its_skip_load_store_the_same_rows(tmp_path: Path) -> None:
    """The direct load (clean file) and the staged load (a file with a bad row,
    loaded with on_error="skip") store the same good rows."""
    data = [*ROWS, ROWS[1], ROWS[3]]
    clean = write_csv(tmp_path / "clean.csv", data)
    dirty = write_csv(
        tmp_path / "dirty.csv", [*data[:3], "e1,A,u1,soon,click,r1,i1,,,,", *data[3:]]
    )
    stored = []
    for path, on_error in ((clean, "abort"), (dirty, "skip")):
        s = open_store("duckdb:///:memory:")
        summary = ingest_file(s, path, on_error=on_error)  # type: ignore[arg-type]
        assert (summary.inserted, summary.duplicates) == (6, 2)
        stored.append(rows(s, "SELECT * EXCLUDE (ingest_id) FROM events ORDER BY ALL"))
        s.close()
    assert stored[0] == stored[1]


def test_a_failed_file_does_not_use_up_an_ingest_id(store: Database, tmp_path: Path) -> None:
    bad = write_csv(tmp_path / "bad.csv", [*ROWS, "e1,A,u1,soon,click,r1,i1,,,,"])
    with pytest.raises(InputError):
        ingest_file(store, bad)
    good = ingest_file(store, write_csv(tmp_path / "good.csv", ROWS))
    assert good.ingest_id == 1
    assert scalar(store, "SELECT min(ingest_id) FROM events") == 1


def test_event_id_identifies_a_row_within_its_experiment(store: Database, tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "ids.csv",
        [
            "e1,A,u1,2024-05-01,exposure,,,,,x1,",
            "e1,A,u1,2024-05-01,exposure,,,,,x1,",  # same id, same row: a repeat
            "e2,A,u1,2024-05-01,exposure,,,,,x1,",  # same id, other experiment: kept
            "e1,A,u1,2024-05-01,exposure,,,,,,",  # no id: identified by content
        ],
    )
    s = ingest_file(store, path)
    assert (s.inserted, s.duplicates, s.repeated_in_file, s.already_stored) == (3, 1, 1, 0)
    assert rows(store, "SELECT experiment, ts FROM events WHERE event_id = 'x1' ORDER BY 1") == [
        ("e1", dt.datetime(2024, 5, 1)),
        ("e2", dt.datetime(2024, 5, 1)),
    ]


# --- timestamps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01T12:30:00", dt.datetime(2024, 5, 1, 12, 30)),
        ("2024-05-01 12:30:00", dt.datetime(2024, 5, 1, 12, 30)),
        ("2024-05-01", dt.datetime(2024, 5, 1)),
        ("2024-05-01T12:30:00Z", dt.datetime(2024, 5, 1, 12, 30)),
        ("2024-05-01T12:30:00+02:00", dt.datetime(2024, 5, 1, 10, 30)),
        ("2024-05-01T01:30:00+02:00", dt.datetime(2024, 4, 30, 23, 30)),
        ("2024-05-01T12:30:00-05:30", dt.datetime(2024, 5, 1, 18, 0)),
        ("2024-05-01T12:30:00.123456Z", dt.datetime(2024, 5, 1, 12, 30, 0, 123456)),
    ],
)
def test_timestamps_are_stored_in_utc(
    store: Database, tmp_path: Path, written: str, utc: dt.datetime
) -> None:
    ingest_file(store, write_csv(tmp_path / "t.csv", [f"e1,A,u1,{written},exposure,,,,,,"]))
    assert rows(store, "SELECT ts FROM events") == [(utc,)]
    assert rows(store, "SELECT first_ts, last_ts FROM experiments") == [(utc, utc)]


def test_no_zone_means_utc_whatever_the_machine_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        s = open_store(str(tmp_path / "tz.duckdb"))
        try:
            ingest_file(
                s, write_csv(tmp_path / "t.csv", ["e1,A,u1,2024-05-01T12:30:00,click,,i,,,,"])
            )
            assert rows(s, "SELECT ts FROM events") == [(dt.datetime(2024, 5, 1, 12, 30),)]
        finally:
            s.close()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# --- attributes ------------------------------------------------------------------------


def test_extra_columns_are_kept_as_json_attributes(store: Database, tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "a.csv",
        [
            'e1,A,u1,2024-05-01,exposure,,,,,,,mobile,"Paris, FR",1',
            "e1,A,u2,2024-05-01,exposure,,,,,,,desktop,,2",
        ],
        HEADER + ",device,city,bad",  # 'bad' is also a name abeval uses inside
    )
    assert ingest_file(store, path).inserted == 2
    got = rows(store, "SELECT user_id, attributes FROM events ORDER BY user_id")
    assert [(u, json.loads(str(a))) for u, a in got] == [
        ("u1", {"bad": "1", "city": "Paris, FR", "device": "mobile"}),
        ("u2", {"bad": "2", "city": None, "device": "desktop"}),
    ]
    # Readable with DuckDB's JSON operators, as the segment queries do.
    assert rows(
        store, "SELECT CAST(attributes AS JSON) ->> 'device' FROM events ORDER BY user_id"
    ) == [("mobile",), ("desktop",)]


def test_without_extra_columns_attributes_are_null(store: Database, tmp_path: Path) -> None:
    ingest_file(store, write_csv(tmp_path / "a.csv", ROWS[:1]))
    assert rows(store, "SELECT attributes FROM events") == [(None,)]


# --- property: counts in the store equal counts in the source --------------------------

_ID = st.text(alphabet=st.sampled_from("abcXYZ09é,\"_-;|'"), min_size=1, max_size=6)


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, str]]:
    n = draw(st.integers(min_value=0, max_value=40))
    experiments = draw(st.lists(_ID, min_size=1, max_size=3, unique=True))
    arms = draw(st.lists(_ID, min_size=1, max_size=3, unique=True))
    out = []
    for i in range(n):
        etype = draw(st.sampled_from(["exposure", "impression", "click", "purchase", "rating"]))
        row = {
            "experiment": draw(st.sampled_from(experiments)),
            "arm": draw(st.sampled_from(arms)),
            "user_id": draw(_ID),
            "ts": f"2024-05-{draw(st.integers(1, 28)):02d}T{draw(st.integers(0, 23)):02d}:00:00",
            "event_type": etype,
            "request_id": draw(_ID) if etype == "impression" else "",
            "item_id": draw(_ID) if etype in ("impression", "click") else "",
            "position": str(draw(st.integers(1, 50))) if etype == "impression" else "",
            "value": str(draw(st.integers(0, 500)) / 4) if etype in ("purchase", "rating") else "",
            "event_id": f"id{i}" if draw(st.booleans()) else "",
            "device": draw(st.sampled_from(["", "ios", "web"])),
        }
        out.append(row)
    # Repeat some rows: they must count once.
    out += draw(st.lists(st.sampled_from(out), max_size=5)) if out else []
    return out


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=events())
def test_counts_per_experiment_arm_and_type_match_the_source(
    tmp_path: Path, data: list[dict[str, str]]
) -> None:
    buf = io.StringIO()
    names = [*HEADER.split(","), "device"]
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    w.writeheader()
    w.writerows(data)
    path = tmp_path / "p.csv"
    path.write_text(buf.getvalue())
    # A row is identified by its event id (unique per generated row) or its content.
    unique = {tuple(r.values()): r for r in data}.values()
    expected = Counter((r["experiment"], r["arm"], r["event_type"]) for r in unique)
    s = open_store("duckdb:///:memory:")
    try:
        summary = ingest_file(s, path)
        assert (summary.rows_read, summary.rejected) == (len(data), 0)
        assert summary.inserted == sum(expected.values())
        got = rows(s, "SELECT experiment, arm, event_type, count(*) FROM events GROUP BY ALL")
        assert Counter({(e, a, t): n for e, a, t, n in got}) == expected
        assert ingest_file(s, path).inserted == 0
    finally:
        s.close()


# --- interruption ----------------------------------------------------------------------


def test_an_error_after_the_insert_leaves_nothing(store: Database, tmp_path: Path) -> None:
    ingest_file(store, write_csv(tmp_path / "a.csv", ROWS[:2]))
    before = state(store)
    seen_inside: list[object] = []

    def fail(conn: object, *_args: object) -> None:
        # Inside the transaction the new rows and the rejected row are there ...
        seen_inside.append(conn.execute(text("SELECT count(*) FROM events")).scalar())  # type: ignore[attr-defined]
        seen_inside.append(conn.execute(text("SELECT count(*) FROM rejected_rows")).scalar())  # type: ignore[attr-defined]
        raise RuntimeError("disk full")

    data = [*ROWS, "e1,A,u9,2024-05-01,page-view,,,,,,"]
    with mock.patch.object(ingest_module, "_record_ingest", fail), pytest.raises(RuntimeError):
        ingest_file(store, write_csv(tmp_path / "b.csv", data), on_error="skip")
    assert seen_inside == [6, 1]
    # ... and after the error nothing is.
    assert state(store) == before
    # The store is usable afterwards, and the staging tables are gone.
    assert ingest_file(store, tmp_path / "b.csv", on_error="skip").inserted == 4
    assert rows(store, "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'abeval_%'") == [
        (0,)
    ]


def test_a_failed_read_leaves_the_connection_usable(store: Database, tmp_path: Path) -> None:
    """A statement that fails inside the transaction aborts it; the error reported is
    the reader's, not the cleanup's."""
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="cannot read as parquet"):
        ingest_file(store, tmp_path / "junk.parquet")
    (tmp_path / "bad.jsonl").write_text('{"experiment": "e1", oops\n')
    with pytest.raises(InputError, match="no line holds a JSON object"):
        ingest_file(store, tmp_path / "bad.jsonl")
    assert ingest_file(store, write_csv(tmp_path / "a.csv", ROWS)).inserted == 6


_KILLED_INGEST = textwrap.dedent(
    """
    import sys, time
    from abeval.store import open_store
    from abeval.store import ingest
    from abeval.store.ingest import record

    def stall(*args, **kwargs):
        # The events are inserted (uncommitted): say so, then wait to be killed.
        print("inserted", flush=True)
        time.sleep(60)

    record._record_ingest = stall
    ingest.ingest_file(open_store(sys.argv[1]), sys.argv[2])
    """
)


def test_a_killed_ingest_leaves_the_store_as_before(tmp_path: Path) -> None:
    """kill -9 after the rows are inserted and before the commit: the next open
    finds the store as it was (DuckDB replays only committed work from its WAL)."""
    db = tmp_path / "k.duckdb"
    s = open_store(str(db))
    ingest_file(s, write_csv(tmp_path / "a.csv", ROWS[:2]))
    before = state(s)
    s.close()
    big = [f"big,A,u{i},2024-05-01T10:00:00,exposure,,,,,," for i in range(20_000)]
    write_csv(tmp_path / "big.csv", big)
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_INGEST, str(db), str(tmp_path / "big.csv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "inserted", (
            proc.stderr.read() if proc.stderr else ""
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    s = open_store(str(db))
    try:
        assert state(s) == before
        assert ingest_file(s, tmp_path / "big.csv").inserted == 20_000
    finally:
        s.close()


@pytest.mark.slow
def test_killing_the_cli_mid_ingest_leaves_the_store_as_before(tmp_path: Path) -> None:
    """The real thing, timing-dependent: kill -9 ``abeval ingest`` while it reads a
    large file. Whenever the kill lands, the store holds all of it or none of it."""
    db = tmp_path / "k.duckdb"
    s = open_store(str(db))
    ingest_file(s, write_csv(tmp_path / "a.csv", ROWS))
    s.close()
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT 'big' AS experiment, CASE WHEN i % 2 = 0 THEN 'A' ELSE 'B' END AS arm, "
        "'u' || i AS user_id, TIMESTAMP '2024-05-01' + INTERVAL (i % 86400) SECOND AS ts, "
        "'exposure' AS event_type, NULL AS request_id, NULL AS item_id, NULL AS position, "
        "NULL AS value, 'x' || i AS event_id, NULL AS propensity FROM range(3000000) t(i)) "
        f"TO '{tmp_path / 'big.csv'}' (HEADER)"
    )
    con.close()
    abeval = Path(sys.executable).with_name("abeval")
    proc = subprocess.Popen([str(abeval), "ingest", str(tmp_path / "big.csv"), "--db", str(db)])
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    s = open_store(str(db))
    try:
        n = scalar(s, "SELECT count(*) FROM events WHERE experiment = 'big'")
        ingests = scalar(s, "SELECT count(*) FROM ingests")
        assert (n, ingests) in ((0, 1), (3_000_000, 2))
        assert scalar(s, "SELECT count(*) FROM events WHERE experiment = 'e1'") == 6
    finally:
        s.close()


@pytest.mark.postgres
def test_postgres_store_validates_skips_and_deduplicates(
    tmp_path: Path, postgres_database: str
) -> None:
    """The same rules on PostgreSQL, where staging runs in a local DuckDB and the
    good rows arrive by COPY."""
    s = open_store(postgres_database)
    try:
        data = [
            *ROWS,
            "e1,A,u9,2024-05-01,page-view,,,,,,",
            "e1,A,u9,2024-05-01T12:00:00+02:00,click,,i,,,,",
        ]
        path = write_csv(tmp_path / "pg.csv", data)
        with pytest.raises(
            InputError, match=r"pg\.csv:8:event_type: unknown event_type 'page-view'"
        ):
            ingest_file(s, path)
        assert state(s) == (0, 0, 0, 0)
        first = ingest_file(s, path, on_error="skip")
        assert (first.inserted, first.rejected, first.status) == (7, 1, "partial")
        assert rows(s, "SELECT line, column_name, raw FROM rejected_rows") == [
            (8, "event_type", data[6])
        ]
        assert rows(s, "SELECT ts FROM events WHERE user_id = 'u9'") == [
            (dt.datetime(2024, 5, 1, 10),)
        ]
        again = ingest_file(s, path, on_error="skip")
        assert (again.inserted, again.duplicates) == (0, 7)
        assert state(s) == (7, 2, 2, 1)
    finally:
        s.close()


def test_the_ingest_record_has_the_file_size_and_sha256(store: Database, tmp_path: Path) -> None:
    import hashlib

    path = write_csv(tmp_path / "events.csv", ROWS)
    data = path.read_bytes()
    summary = ingest_file(store, path)
    recorded = rows(
        store,
        "SELECT source, format, size_bytes, checksum, rows_read, rows_inserted, rows_duplicate, "
        "rows_rejected, status FROM ingests",
    )
    assert recorded == [
        (
            str(path),
            "csv",
            len(data),
            "sha256:" + hashlib.sha256(data).hexdigest(),
            6,
            6,
            0,
            0,
            "ok",
        )
    ]
    assert summary.ingest_id == 1


def test_detect_format_takes_the_option_or_the_name() -> None:
    assert detect_format(Path("e.CSV.gz"), None) == "csv"
    assert detect_format(Path("d/e.pq"), None) == "parquet"
    assert detect_format(Path("e.ndjson.zst"), None) == "jsonl"
    assert detect_format(Path("e.xlsx"), "parquet") == "parquet"
    with pytest.raises(InputError) as unknown:
        detect_format(Path("e.xlsx"), None)
    said = (
        "e.xlsx: cannot tell the format from the extension; "
        "name it .csv, .csv.gz, .parquet or .jsonl, or pass {}"
    )
    # The library names its parameter; the CLI spells the option.
    assert str(unknown.value) == said.format("input_format")
    assert unknown.value.spelt(option_name) == said.format("--input-format")
    with pytest.raises(OptionError) as option:
        detect_format(Path("e.csv"), "xml")
    assert option.value.line("--input-format") == (
        "--input-format 'xml': choose one of csv, parquet, jsonl"
    )


def test_format_error_points_at_file_line_and_column() -> None:
    assert format_error(Path("e.csv"), "csv", 3, "ts", "bad ts") == "e.csv:3:ts: bad ts"
    assert format_error(Path("e.jsonl"), "jsonl", 4, "", "malformed") == "e.jsonl:4: malformed"
    assert format_error(Path("e.pq"), "parquet", 2, "arm", "empty") == "e.pq:row 2:arm: empty"


def test_may_repeat_says_no_only_when_every_key_differs() -> None:
    duck = duckdb.connect()
    duck.execute("CREATE TABLE r (experiment VARCHAR, event_id VARCHAR, row_key VARCHAR)")
    duck.execute("INSERT INTO r VALUES ('e', 'a', NULL), ('e', NULL, 'h:1'), ('f', 'a', NULL)")
    assert not may_repeat(duck, "r")
    duck.execute("INSERT INTO r VALUES ('e', NULL, 'h:1')")
    assert may_repeat(duck, "r")
