"""What replay refuses before it reads the store, and the messages it says it with."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import Log

from abeval.analysis.replay import replay
from abeval.errors import AbevalError
from abeval.store import open_store


def test_replay_refuses_bad_gains_and_metrics_it_cannot_replay(tmp_path: Path) -> None:
    log = Log()
    log.add("A", "u1", "impression", "r1", "a", 1)
    store = open_store(str(tmp_path / "s.duckdb"))
    with store.begin() as conn:
        log.insert(conn)
    with store.connect() as conn:
        with pytest.raises(AbevalError) as gains:
            replay(conn, "exp", gains={"click": 0.0})
        with pytest.raises(AbevalError) as metrics:
            replay(conn, "exp", metrics="ndcg@5,rmse,serendipity@5")
    store.close()
    assert gains.value.message == (
        "every relevance gain must be positive, as in purchase=2, click=1"
    )
    assert metrics.value.message == (
        "rmse, serendipity@5 cannot be replayed from logs; "
        "use `abeval evaluate` with files for rating and serendipity metrics"
    )
