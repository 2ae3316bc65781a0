"""The direct load's SQL against the staging SQL, which defines the rows.

``direct_select`` may call a good row bad (the file then goes to the staged
load), but a row it calls good must be good for the staging SQL too, with every
stored value and the normalising flags the same. Rows are drawn from values on
the edges of every check, padded with ASCII and Unicode spaces, byte-order marks
and tabs, in CSV, JSON Lines and Parquet; then whole files go through
``ingest_file`` both ways.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import text

from abeval.store import Database, open_store
from abeval.store.backends.duckdb import direct as ingest_direct
from abeval.store.backends.duckdb.direct_sql import direct_select
from abeval.store.ingest import ingest_file
from abeval.store.ingest import staged as ingest_staged
from abeval.store.ingest.source import open_source
from abeval.store.ingest.staging import EVENT_COLUMNS, stage_select

PADS = ["", "", "", " ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\u200b", "\ufeff"]
IDS = ["e1", "A", "u 1", "é", "x-1", "", "  ", "\u00a0", "Ä b"]
VALUES: dict[str, list[str]] = {
    "experiment": IDS,
    "arm": IDS,
    "user_id": IDS,
    "ts": [
        "2024-05-01T10:00:00Z",
        "2024-05-01",
        "2024-05-01 10:00:00+02:00",
        "2024-03-31 02:30 Europe/Berlin",
        "1582-10-10 12:00",
        "-0044-03-15",
        "294247-01-10 04:00:54.775806",
        "2024-02-30",
        "infinity",
        "-infinity",
        "epoch",
        "soon",
        # epoch numbers, and text with a colon (never a number: no number parse)
        *("1714557600", "1714557600000", "1.7145576e9", "10:00", "1714557600:00", "1e5:"),
        "",
    ],
    "event_type": [
        "exposure",
        "impression",
        "click",
        "purchase",
        "rating",
        "CLICK",
        "Purchase",
        "clic\u212a",  # the Kelvin sign lower-cases to k
        "view",
        "add_to_cart",
        "Add_To_Cart",
        "add-to-cart",
        "_x9",
        "9lives",
        "a" * 64,
        "a" * 65,
        "",
    ],
    "request_id": IDS,
    "item_id": IDS,
    "position": [
        *("1", "2", "1.0", "1e0", "0", "-1", "1.5", "2147483647", "2147483648"),
        *("inf", "nan", "x", ""),
    ],
    "value": [
        *("0", "9.5", "-0", "-1", "1e15", "-1e15", "1.0000001e15", "1e16", "inf", "nan"),
        *("abc", ""),
    ],
    "event_id": IDS,
    "propensity": ["0.5", "1", "0", "1.0001", "1e-300", "-0.1", "nan", "x", ""],
}
# Fields that the direct load does not trim: padding them may send a file to the
# staged load, but must never change what is stored.
UNTRIMMED = ("ts", "event_type", "position", "value", "propensity")
# The characters of PADS that TRIM removes (Unicode's space separators).
ZS = " \u00a0\u3000\u2009"


def draw_rows(n: int, seed: int) -> list[dict[str, str]]:
    """Rows of the event format: mostly good, every value padded now and then."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        row = {
            c: rng.choice(vs[:3]) if rng.random() < 0.6 else rng.choice(vs)
            for c, vs in VALUES.items()
        }
        if rng.random() < 0.5:
            c = rng.choice(list(VALUES))
            row[c] = rng.choice(PADS) + row[c] + rng.choice(PADS)
        row["k"] = str(k)
        out.append(row)
    return out


def write(rows: list[dict[str, str]], path: Path) -> Path:
    columns = list(rows[0])
    if path.suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows([r[c] for c in columns] for r in rows)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}), path)
    return path


def compare(path: Path, rows: list[dict[str, str]]) -> tuple[int, int, int]:
    """Run both SELECTs over ``path``; return (rows, good by staging, good by direct)
    after checking that the direct SQL agrees wherever it calls a row good."""
    duck = duckdb.connect()
    duck.execute("SET TimeZone = 'UTC'")
    src = open_source(duck, path, path.suffix.lstrip("."))  # type: ignore[arg-type]
    cols = ", ".join(EVENT_COLUMNS)
    duck.execute(
        f"CREATE TABLE s AS SELECT {cols}, NOT bad AS good, norm FROM ({stage_select(src)})"
    )
    duck.execute(f"CREATE TABLE d AS SELECT {cols}, good, norm FROM ({direct_select(src)})")
    # Rows are matched by their attributes, which hold the row number k.
    same = " AND ".join(f"s.{c} IS NOT DISTINCT FROM d.{c}" for c in (*EVENT_COLUMNS, "norm"))
    n, n_s, n_d, unmatched, differ, bad_in_s = duck.execute(
        "SELECT count(*), count(*) FILTER (WHERE s.good), count(*) FILTER (WHERE d.good), "
        "count(*) FILTER (WHERE d.attributes IS NULL), "
        f"count(*) FILTER (WHERE d.good AND s.good AND NOT ({same})), "
        "count(*) FILTER (WHERE d.good AND NOT s.good) "
        "FROM s LEFT JOIN d ON s.attributes = d.attributes"
    ).fetchone()
    assert unmatched == 0
    assert bad_in_s == 0, "the direct SQL called a bad row good"
    assert differ == 0, "the direct SQL stores another value than the staging SQL"
    # Where the direct SQL refuses a good row, a field it does not trim is padded.
    refused = (
        duck.execute(
            "SELECT list(d.attributes) FROM s JOIN d ON s.attributes = d.attributes "
            "WHERE s.good AND NOT d.good"
        ).fetchone()[0]
        or []
    )
    duck.close()
    padded = {
        json.dumps({"k": r["k"]}, separators=(",", ":"))
        for r in rows
        if any(r[c] != r[c].strip(ZS) for c in UNTRIMMED)
    }
    assert set(refused) <= padded
    return n, n_s, n_d


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
@pytest.mark.parametrize("seed", [1, 2])
def test_direct_sql_agrees_with_the_staging_sql(tmp_path: Path, suffix: str, seed: int) -> None:
    rows = draw_rows(3000, seed)
    path = write(rows, tmp_path / f"events{suffix}")
    n, good_staged, good_direct = compare(path, rows)
    assert n == len(rows)
    # Enough of both kinds for the comparison to mean something.
    assert 300 < good_direct <= good_staged < n - 300


def test_the_utc_wall_time_is_make_timestamp_of_the_microseconds() -> None:
    """``make_timestamp(epoch_us(t))`` against ``t AT TIME ZONE 'UTC'`` over the
    whole range of TIMESTAMPTZ (including years BC and the Julian-Gregorian switch)."""
    duck = duckdb.connect()
    duck.execute("SET TimeZone = 'UTC'")
    n, differ = duck.execute(
        "WITH r AS (SELECT CAST((random() * 2 - 1) * 9223371331200000000 AS BIGINT) AS us "
        "FROM range(200000) UNION ALL SELECT unnest([0, -1, 1, -12219292800000000])), "
        "t AS (SELECT CAST(make_timestamp(us) AS TIMESTAMPTZ) AS t FROM r) "
        "SELECT count(*), count(*) FILTER (WHERE (t AT TIME ZONE 'UTC') "
        "IS DISTINCT FROM make_timestamp(epoch_us(t))) FROM t"
    ).fetchone()
    assert (n, differ) == (200004, 0)


# --- whole files, both loads ---------------------------------------------------------

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,event_id,k"
NORMALISED = [
    "\ufeffe1, A ,u1,2024-05-01T10:00:00Z,EXPOSURE,,,,,x1,1",
    "e1,A,\u00a0u2\u3000,2024-05-01T10:01:00Z,impression,r1 , i1,1,,x2,2",
    "e1,A,u2,2024-05-01T10:02:00Z,Click,r1,i1,,,x3,3",
    "e1,B,u3,2024-05-01T10:05:00Z,purchase,,i3,,9.5,,4",
    "e1,B,u3,2024-05-01T10:05:00Z,purchase,,i3,,9.5,,4",
]


@pytest.fixture
def stores() -> Iterator[tuple[Database, Database]]:
    a, b = open_store("duckdb:///:memory:"), open_store("duckdb:///:memory:")
    yield a, b
    a.close()
    b.close()


def stored(store: Database) -> list[tuple[object, ...]]:
    with store.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text("SELECT * EXCLUDE (ingest_id) FROM events ORDER BY ALL")
            ).fetchall()
        ]


def test_a_file_with_padded_ids_takes_the_direct_load_and_stores_what_staging_does(
    tmp_path: Path, stores: tuple[Database, Database]
) -> None:
    path = tmp_path / "e.csv"
    path.write_text("\n".join([HEADER, *NORMALISED]) + "\n", encoding="utf-8")
    direct, staged = stores
    with mock.patch.object(ingest_staged, "load_staged", side_effect=AssertionError("staged")):
        a = ingest_file(direct, path)
    with mock.patch.object(ingest_direct, "load_direct", return_value=None):
        b = ingest_file(staged, path)
    assert stored(direct) == stored(staged)
    assert len(stored(direct)) == 4
    keep = ("rows_read", "inserted", "repeated_in_file", "trimmed_ids", "lowercased_event_types")
    assert [getattr(a, k) for k in keep] == [getattr(b, k) for k in keep] == [5, 4, 1, 2, 2]
    assert a.notes == b.notes


def test_a_padded_typed_field_goes_to_the_staged_load_with_the_same_result(
    tmp_path: Path, stores: tuple[Database, Database]
) -> None:
    path = tmp_path / "e.csv"
    rows = [*NORMALISED, "e1,B,u3,2024-05-01T10:06:00Z\u00a0,click\u3000,,i3,,,,5"]
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    direct, staged = stores
    with mock.patch.object(ingest_staged, "load_staged", wraps=ingest_staged.load_staged) as slow:
        a = ingest_file(direct, path)
    assert slow.call_count == 1
    with mock.patch.object(ingest_direct, "load_direct", return_value=None):
        b = ingest_file(staged, path)
    assert stored(direct) == stored(staged)
    assert (a.inserted, a.status) == (b.inserted, b.status) == (5, "ok")
