"""The ``propensity_given_above`` column (docs/usage.md#the-event-format): read
from CSV, Parquet and JSON Lines, checked row by row (a probability in (0, 1])
and request by request (given for every impression of a request or none; one
item per position among impressions with a probability), with one
``FILE:LINE:COLUMN: reason`` line and nothing stored."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ingest_store import counts, query, run

HEADER = (
    "experiment,arm,user_id,ts,event_type,request_id,item_id,position,propensity,"
    "propensity_given_above"
)
GOOD = [
    "e1,A,u1,2024-05-01T10:00:00Z,exposure,,,,,",
    "e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i1,1,0.5,0.5",
    "e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i2,2,0.3,0.6",
    "e1,A,u1,2024-05-01T10:02:00Z,click,r1,i2,,,",
    "e1,A,u1,2024-05-01T10:03:00Z,impression,r2,i3,1,0.2,",
]
NOTHING = (
    "nothing was loaded from this file; fix the rows or pass --on-error skip to load the good rows"
)


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def _refused(tmp: Path, rows: list[str], first: str, n_bad: int) -> None:
    db = tmp / "s.duckdb"
    result = run("ingest", str(_csv(tmp / "bad.csv", rows)), "--db", str(db))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[0] == (
        f"Error: {tmp / 'bad.csv'}:{first} ({n_bad} bad row{'s' if n_bad > 1 else ''}; {NOTHING})"
    )
    assert counts(db)[0] == 0


def test_good_rows_keep_both_probabilities(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    result = run("ingest", str(_csv(tmp_path / "ok.csv", GOOD)), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert query(
        db,
        "SELECT request_id, position, propensity, propensity_given_above FROM events "
        "WHERE event_type = 'impression' ORDER BY request_id, position",
    ) == [("r1", 1, 0.5, 0.5), ("r1", 2, 0.3, 0.6), ("r2", 1, 0.2, None)]


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "x"])
def test_given_above_outside_zero_one_is_a_bad_row(tmp_path: Path, value: str) -> None:
    rows = [*GOOD[:2], f"e1,A,u1,2024-05-01T10:01:00Z,impression,r1,i2,2,0.3,{value}"]
    _refused(
        tmp_path,
        rows,
        f"4:propensity_given_above: propensity_given_above must be a probability in (0, 1], "
        f"got '{value}'",
        1,
    )


def test_given_above_on_some_positions_of_a_request_refuses_the_request(tmp_path: Path) -> None:
    rows = [
        *GOOD,
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i1,1,0.5,0.5",
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i2,2,0.5,",
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i3,3,0.5,0.7",
    ]
    _refused(
        tmp_path,
        rows,
        "7:propensity_given_above: request 'r3' has propensity_given_above on 2 of its 3 "
        "impressions; give it for every position of the request or for none",
        3,
    )


def test_two_items_at_one_position_with_a_probability_refuse_the_request(
    tmp_path: Path,
) -> None:
    rows = [
        *GOOD,
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i1,1,0.5,",
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i2,1,0.5,",
    ]
    _refused(
        tmp_path,
        rows,
        "7:position: request 'r3' shows 2 items at position 1 with a logging probability; "
        "a logged list has one item per position",
        2,
    )


def test_two_items_at_one_position_without_probabilities_are_accepted(tmp_path: Path) -> None:
    rows = [
        *GOOD,
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i1,1,,",
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i2,1,,",
    ]
    result = run("ingest", str(_csv(tmp_path / "ok.csv", rows)), "--db", str(tmp_path / "s.db"))
    assert result.exit_code == 0, result.output


def test_skip_sets_the_faulty_request_aside_and_loads_the_rest(tmp_path: Path) -> None:
    rows = [
        *GOOD,
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i1,1,0.5,0.5",
        "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i2,2,0.5,",
    ]
    db = tmp_path / "s.duckdb"
    path = _csv(tmp_path / "bad.csv", rows)
    result = run("ingest", str(path), "--db", str(db), "--on-error", "skip", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["files"][0]
    assert (summary["rows_read"], summary["rejected"], summary["inserted"]) == (7, 2, 5)
    assert query(db, "SELECT line, column_name FROM rejected_rows ORDER BY line") == [
        (7, "propensity_given_above"),
        (8, "propensity_given_above"),
    ]


def _records() -> list[dict[str, object]]:
    names = HEADER.split(",")
    out = []
    for row in GOOD:
        values = row.split(",")
        rec: dict[str, object] = {}
        for n, v in zip(names, values, strict=True):
            if v == "":
                continue
            rec[n] = float(v) if n.startswith("propensity") else int(v) if n == "position" else v
        out.append(rec)
    return out


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_parquet_and_json_lines_carry_the_column(tmp_path: Path, fmt: str) -> None:
    records = _records()
    records[2]["propensity_given_above"] = 1.7  # out of range
    path = tmp_path / f"e.{fmt}"
    names = HEADER.split(",")
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist([{n: r.get(n) for n in names} for r in records]), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "s.duckdb"
    result = run("ingest", str(path), "--db", str(db))
    assert result.exit_code == 1
    where = "row 3" if fmt == "parquet" else "3"
    assert result.stderr.splitlines()[0].startswith(
        f"Error: {path}:{where}:propensity_given_above: propensity_given_above must be a "
        "probability in (0, 1], got '1.7'"
    )
    records[2]["propensity_given_above"] = 0.6
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist([{n: r.get(n) for n in names} for r in records]), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run("ingest", str(path), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert query(
        db, "SELECT sum(propensity_given_above) FROM events WHERE event_type = 'impression'"
    ) == [(pytest.approx(1.1),)]


@pytest.mark.postgres
def test_postgres_store_keeps_the_column_and_refuses_a_mixed_request(
    tmp_path: Path, postgres_database: str
) -> None:
    from sqlalchemy import text

    from abeval.errors import InputError
    from abeval.store import open_store
    from abeval.store.ingest import ingest_file

    mixed = [*GOOD, "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i1,1,0.5,0.5",
             "e1,A,u1,2024-05-01T10:04:00Z,impression,r3,i2,2,0.5,"]  # fmt: skip
    with open_store(postgres_database) as pg:
        with pytest.raises(InputError, match="request 'r3' has propensity_given_above on 1 of"):
            ingest_file(pg, _csv(tmp_path / "bad.csv", mixed))
        ingest_file(pg, _csv(tmp_path / "ok.csv", GOOD))
        with pg.connect() as conn:
            got = conn.execute(
                text(
                    "SELECT request_id, position, propensity_given_above FROM events "
                    "WHERE event_type = 'impression' ORDER BY request_id, position"
                )
            ).fetchall()
    assert [tuple(r) for r in got] == [("r1", 1, 0.5), ("r1", 2, 0.6), ("r2", 1, None)]
