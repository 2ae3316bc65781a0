"""Ingest into PostgreSQL (staged in DuckDB, loaded through COPY) counts repeats
and conflicts as on DuckDB, and a conflict with the store's rows stops the load
with one line. The server is a real one, started by the suite (tests/pgserver.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from abeval.errors import InputError
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.postgres

HEADER = "experiment,arm,user_id,ts,event_type,value,event_id"


def purchase(eid: str, arm: str = "A", user: str = "u1", value: str = "1") -> str:
    return f"e1,{arm},{user},2024-05-01T10:00:00Z,purchase,{value},{eid}"


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def table_counts(store: object) -> tuple[int, ...]:
    with store.connect() as conn:  # type: ignore[attr-defined]
        return tuple(
            int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
            for t in ("events", "ingests", "rejected_rows")
        )


def test_repeats_and_conflicts_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    with open_store(postgres_database) as pg:
        first = ingest_file(pg, write(tmp_path / "a.csv", [purchase("x1"), purchase("x2")]))
        assert (first.inserted, first.duplicates) == (2, 0)

        rows = [
            purchase("x1"),  # already stored
            purchase("x3"),
            purchase("x3"),  # repeated in the file
            purchase("x4"),
            purchase("x4", "B", "u2", "2"),  # conflicts with the row above
        ]
        s = ingest_file(pg, write(tmp_path / "b.csv", rows), on_error="skip")
        assert (s.rows_read, s.inserted, s.repeated_in_file, s.already_stored) == (5, 1, 1, 1)
        assert (s.conflicts, s.rejected, s.duplicates) == (2, 0, 2)
        assert table_counts(pg) == (3, 2, 2)
        with pg.connect() as conn:
            lines = conn.execute(
                text("SELECT line, column_name FROM rejected_rows ORDER BY line")
            ).fetchall()
        assert [tuple(r) for r in lines] == [(5, "event_id"), (6, "event_id")]

        # A row whose event_id the store holds with other content stops the load.
        before = table_counts(pg)
        with pytest.raises(InputError) as caught:
            ingest_file(pg, write(tmp_path / "c.csv", [purchase("x2", value="7")]))
        assert caught.value.message == (
            f"{tmp_path / 'c.csv'}: event_id 'x2' is already in the store (ingest 1) with "
            "different content; give each event its own event_id (nothing was loaded from "
            "this file)"
        )
        assert table_counts(pg) == before


def test_issue_22_inputs_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    # Mixed line endings, epoch timestamps (by magnitude and declared) and a
    # stream: the staged load in DuckDB, then COPY, as on DuckDB.
    import io

    import abeval

    rows = [HEADER, *(f"e1,A,u{i},{1740906001 + i},exposure,," for i in range(3))]
    data = "".join(r + ("\r\n" if i % 2 else "\n") for i, r in enumerate(rows)).encode()
    (tmp_path / "m.csv").write_bytes(data)
    with abeval.open(postgres_database) as store:
        s = store.ingest(tmp_path / "m.csv")
        assert (s.rows_read, s.inserted) == (3, 3)
        ms = f"{HEADER}\ne1,A,v1,1740906001123,exposure,,\n".encode()
        s = store.ingest(io.BytesIO(ms), input_format="csv")
        assert (s.file, s.inserted) == ("-", 1)
        s = store.ingest(io.BytesIO(f"{HEADER}\ne1,A,w1,60,exposure,,\n".encode()),
                         input_format="csv", epoch="s")  # fmt: skip
        assert s.inserted == 1
    with open_store(postgres_database) as pg, pg.connect() as conn:
        got = conn.execute(
            text("SELECT user_id, CAST(ts AS TEXT) FROM events ORDER BY user_id")
        ).fetchall()
    assert [tuple(r) for r in got] == [
        ("u0", "2025-03-02 09:00:01"),
        ("u1", "2025-03-02 09:00:02"),
        ("u2", "2025-03-02 09:00:03"),
        ("v1", "2025-03-02 09:00:01.123"),
        ("w1", "1970-01-01 00:01:00"),
    ]
