"""PostgreSQL plans the report's joins from its statistics: an ingest leaves the
statistics of the tables it wrote, so that a report run right after it (before
autovacuum) is planned on the true sizes. Without them the planner took `events`
for a few hundred rows and ran the off-policy click match as a nested loop over
impressions × clicks (233 s against 0.3 s at 200k events, benchmarks/RESULTS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from abeval.store import open_store
from abeval.store.ingest import ingest_file

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,event_id"


@pytest.mark.postgres
def test_an_ingest_leaves_the_statistics_of_what_it_wrote(
    tmp_path: Path, postgres_database: str
) -> None:
    requests, items_per_request = 40, 5
    lines = [HEADER]
    for r in range(requests):
        for p in range(items_per_request):
            lines.append(
                f"e1,{'AB'[r % 2]},u{r % 7},2024-05-01T10:00:{r % 60:02d}Z,impression,"
                f"r{r},i{(r + p) % 30},{p + 1},x{r}-{p}"
            )
    path = tmp_path / "events.csv"
    path.write_text("\n".join(lines) + "\n")
    with open_store(postgres_database) as store:
        ingest_file(store, path)
        with store.connect() as conn:
            tuples = dict(
                conn.execute(
                    text(
                        "SELECT relname, reltuples FROM pg_class WHERE relname IN "
                        "('events', 'request_keys', 'item_keys')"
                    )
                ).fetchall()
            )
    # ANALYZE reads every row of tables this small: the counts are exact
    # (a table never analysed has reltuples -1)
    assert tuples == {"events": 200.0, "request_keys": 40.0, "item_keys": 30.0}
