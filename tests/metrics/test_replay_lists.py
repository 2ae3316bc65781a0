"""The replay's per-list pass on the lists it takes shortcuts for: a request logged
for two users, ranks the bits of an integer cannot hold, AUC of lists whose ranks
are 1..n and of lists whose ranks are not; expected values by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import Log

from abeval.analysis.replay import replay
from abeval.metrics import Conventions
from abeval.store import open_store
from abeval.store.sql.replay import open_replay
from abeval.store.sql.replay_parts import TIE_BITS

GAINS = {"click": 1.0, "purchase": 2.0}


def _replayed(url: str, log: Log, metrics: str):  # type: ignore[no-untyped-def]
    """The replay's metrics and arm counts of ``log`` in a new store at ``url``."""
    store = open_store(url)
    with store.begin() as conn:
        log.insert(conn)
    with store.connect() as conn:
        result = replay(conn, "exp", metrics=metrics, conventions=Conventions(duplicates="dedupe"))
        with open_replay(conn, "exp", GAINS) as source:
            counts = source.arm_counts()
    store.close()
    return result, counts


def _two_users_one_request() -> Log:
    """Request r1 in arm A: u1 shown a (1) and b (2), u2 shown b (2) and c (3); c clicked."""
    log = Log()
    for user in ("u1", "u2"):
        log.add("A", user, "exposure", ts="2024-01-01 00:00:00")
    for user, item, pos in (("u1", "a", 1), ("u1", "b", 2), ("u2", "b", 2), ("u2", "c", 3)):
        log.add("A", user, "impression", "r1", item, pos)
    log.add("A", "u2", "click", "r1", "c")
    return log


def test_a_request_logged_for_two_users_is_a_list_of_each(tmp_path: Path) -> None:
    """r1 in arm A: u1 sees a (1) and b (2), u2 sees b (2) and c (3). Each item's
    user is the least of those it was shown to: a, b -> u1, c -> u2, so r1 is a list
    of u1 and a list of u2, each the whole request (a, b, c; c clicked)."""
    log = _two_users_one_request()
    result, counts = _replayed(str(tmp_path / "s.duckdb"), log, "mrr,auc,precision@3")
    assert counts == [
        {"arm": "A", "users": 2, "users_with_requests": 2, "requests": 1,
         "impressions": 4, "duplicates": 1, "tied": 0},
    ]  # fmt: skip
    mrr = result.get("mrr", "A")  # c at rank 3 in both lists
    assert (mrr.value, mrr.users, mrr.lists) == (pytest.approx(1 / 3), 2, 2)
    # ranks 1..3, c relevant at 3: both non-relevant items above it
    assert result.get("auc", "A").value == pytest.approx(0.0)
    assert result.get("precision@3", "A").value == pytest.approx(1 / 3)


def test_ties_beyond_the_bits_are_counted_on_the_ranks(tmp_path: Path) -> None:
    """r1: ranks 50, 50, 60 (tied, beyond the bits); r2: 45, 46 (not tied, beyond);
    r3: 1, 1 (tied, within); r4: 1, 2 (not tied)."""
    far = TIE_BITS + 10
    log = Log()
    log.add("A", "u1", "exposure", ts="2024-01-01 00:00:00")
    lists = {
        "r1": [("a", far), ("b", far), ("c", far + 10)],
        "r2": [("a", far - 5), ("b", far - 4)],
        "r3": [("a", 1), ("b", 1)],
        "r4": [("a", 1), ("b", 2)],
    }
    for request, shown in lists.items():
        for item, pos in shown:
            log.add("A", "u1", "impression", request, item, pos)
    _, counts = _replayed(str(tmp_path / "s.duckdb"), log, "mrr")
    assert counts[0]["requests"] == 4
    assert counts[0]["tied"] == 2  # r1 and r3


@pytest.mark.parametrize(
    ("shown", "relevant", "auc"),
    [
        # ranks 1..4, relevant at 2 and 4: pairs 2 x 2, ranked right: (2, 3) only
        ([1, 2, 3, 4], {1, 3}, 1 / 4),
        # ranks 2, 5, 5, relevant one of the 5s: x above it (0), the other 5 tied (1/2)
        ([2, 5, 5], {1}, 0.5 / 2),
        # ranks 0, 1, 2 (not 1..n), relevant at 0: above both
        ([0, 1, 2], {0}, 1.0),
        # ranks 1, 2, 4 (a gap), relevant at 2: above 4, below 1
        ([1, 2, 4], {1}, 1 / 2),
        # ranks 1, 2, 2 (tied), relevant at the first 2: below 1, tied with the other
        ([1, 2, 2], {1}, 0.5 / 2),
    ],
)
def test_auc_of_lists_with_and_without_ranks_1_to_n(
    tmp_path: Path, shown: list[int], relevant: set[int], auc: float
) -> None:
    """``relevant`` holds indexes into ``shown`` (the logged positions)."""
    log = Log()
    log.add("A", "u1", "exposure", ts="2024-01-01 00:00:00")
    for i, pos in enumerate(shown):
        log.add("A", "u1", "impression", "r1", f"i{i}", pos)
        if i in relevant:
            log.add("A", "u1", "click", "r1", f"i{i}")
    result, _ = _replayed(str(tmp_path / "s.duckdb"), log, "auc")
    assert result.get("auc", "A").value == pytest.approx(auc)


@pytest.mark.postgres
def test_the_shortcuts_give_on_postgres_what_they_give_on_duckdb(
    tmp_path: Path, postgres_database: str
) -> None:
    """Every list above in one log (two users of one request, ranks beyond the bits,
    tied and gapped ranks): PostgreSQL's counts and metrics are DuckDB's."""
    log = _two_users_one_request()
    far = TIE_BITS + 10
    shown = {"r2": [far, far, far + 10], "r3": [2, 5, 5], "r4": [0, 1, 2], "r5": [1, 2, 2]}
    for request, positions in shown.items():
        for i, pos in enumerate(positions):
            log.add("A", "u1", "impression", request, f"i{i}", pos)
        log.add("A", "u1", "click", request, "i1")
    results = [
        _replayed(url, log, "auc,mrr,map@3")
        for url in (str(tmp_path / "s.duckdb"), postgres_database)
    ]
    (duck, duck_counts), (pg, pg_counts) = results
    assert duck_counts == pg_counts
    assert (duck_counts[0]["requests"], duck_counts[0]["tied"]) == (5, 3)  # r2, r3, r5
    for a, b in zip(duck.metrics, pg.metrics, strict=True):
        assert (a.metric, a.users, a.lists) == (b.metric, b.users, b.lists)
        assert b.value == pytest.approx(a.value, abs=1e-12), a.metric
