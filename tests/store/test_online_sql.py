"""Report queries of abeval.store.sql that the report tests do not pin down."""

from __future__ import annotations

from pathlib import Path

from abeval.store import open_store
from abeval.store.ingest import ingest_file
from abeval.store.sql.provenance import ingests

HEADER = "experiment,arm,user_id,ts,event_type\n"


def test_ingests_lists_the_files_that_brought_an_experiments_events(tmp_path: Path) -> None:
    first = tmp_path / "first.csv"
    first.write_text(
        HEADER
        + "x,A,u1,2024-01-01T00:00:00,exposure\n"
        + "x,B,u2,2024-01-01T00:00:00,exposure\n"
        + "y,A,u3,2024-01-01T00:00:00,exposure\n"
    )
    second = tmp_path / "second.csv"
    second.write_text(HEADER + "x,A,u1,2024-01-02T00:00:00,exposure\n")
    store = open_store(str(tmp_path / "s.duckdb"))
    ingest_file(store, first)
    ingest_file(store, second)
    with store.connect() as conn:
        x, y = ingests(conn, "x"), ingests(conn, "y")
        none = ingests(conn, "z")
    store.close()
    assert [(i["ingest_id"], i["rows_read"], i["rows_inserted"]) for i in x] == [
        (1, 3, 3),
        (2, 1, 1),
    ]
    assert [i["events_in_experiment"] for i in x] == [2, 1]
    assert [Path(i["source"]).name for i in x] == ["first.csv", "second.csv"]
    assert all(len(i["checksum"]) > 0 and i["finished_at"][:4] >= "2024" for i in x)
    assert [(i["ingest_id"], i["events_in_experiment"]) for i in y] == [(1, 1)]
    assert none == ()
