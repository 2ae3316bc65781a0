"""The replay SQL is portable: PostgreSQL 15 gives the numbers DuckDB gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import random_log

from abeval.analysis.replay import default_metrics, replay
from abeval.store import open_store


@pytest.mark.postgres
def test_replay_on_postgres_matches_duckdb(tmp_path: Path, postgres_database: str) -> None:
    log, _ = random_log(3)
    results = []
    for url in (str(tmp_path / "s.duckdb"), postgres_database):
        store = open_store(url)
        with store.begin() as conn:
            log.insert(conn)
        with store.connect() as conn:
            results.append(replay(conn, "exp", metrics=[*default_metrics((3, 5)), "ndcg", "mrr"]))
        store.close()
    duck, pg = results
    assert len(duck.metrics) == len(pg.metrics) > 0
    for a, b in zip(duck.metrics, pg.metrics, strict=True):
        assert (a.metric, a.group, a.users, a.lists) == (b.metric, b.group, b.users, b.lists)
        assert a.value is not None and b.value is not None
        assert b.value == pytest.approx(a.value, abs=1e-12), a.metric
        assert dict(a.left_out) == dict(b.left_out)
        if a.stats is not None:
            assert b.stats is not None
            assert b.stats.ss == pytest.approx(a.stats.ss, abs=1e-9)
    assert duck.arms == pg.arms
