"""The decisions on points the definitions left open (docs/metrics.md#novelty,
#gini, #auc), replayed from a log and evaluated from files, against hand
calculations written here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from metrics_helpers import write_csv
from replay_data import Log

from abeval.analysis.evaluate import evaluate
from abeval.analysis.replay import ReplayResult, replay
from abeval.store import open_store


@pytest.fixture
def replayed(tmp_path: Path) -> ReplayResult:
    """Arm A: u1 is shown [a, b, c] and clicks a. Arm B: u2 is shown [a, d];
    u3 is shown [d] and clicks d. Three analysed users; items a, b, c, d."""
    log = Log()
    for user, arm in (("u1", "A"), ("u2", "B"), ("u3", "B")):
        log.add(arm, user, "exposure", ts="2024-01-01 00:00:00")
    for pos, item in enumerate("abc", start=1):
        log.add("A", "u1", "impression", "r1", item, pos)
    log.add("A", "u1", "click", "r1", "a")
    for pos, item in enumerate("ad", start=1):
        log.add("B", "u2", "impression", "r2", item, pos)
    log.add("B", "u3", "impression", "r3", "d", 1)
    log.add("B", "u3", "click", "r3", "d")
    store = open_store(str(tmp_path / "s.duckdb"))
    try:
        with store.begin() as conn:
            log.insert(conn)
        with store.connect() as conn:
            return replay(conn, "exp", metrics="novelty@3,gini@3,auc")
    finally:
        store.close()


def test_novelty_smooths_items_without_popularity(replayed: ReplayResult) -> None:
    # popularity over the 3 analysed users: a 1/3 (u1), d 1/3 (u3); b and c were
    # never clicked: add-one smoothing, 1 / (3 + 1), and their slots still count.
    a = replayed.get("novelty@3", "A")
    assert a.value == pytest.approx((math.log2(3) + 2 + 2) / 3)
    assert a.counts == {"slots_without_popularity": 2, "slots": 3}
    assert a.left_out == {}
    b = replayed.get("novelty@3", "B")  # slots a, d, d: all have a popularity
    assert b.value == pytest.approx(math.log2(3))
    assert b.counts == {"slots_without_popularity": 0, "slots": 3}


def test_gini_counts_never_shown_catalogue_items_as_zero(replayed: ReplayResult) -> None:
    # Catalogue a, b, c, d. Arm A shows a, b, c once: sorted 0, 1, 1, 1, n = 4, Σx = 3,
    # Σ (2i − n − 1)·x = −3·0 − 1·1 + 1·1 + 3·1 = 3.
    assert replayed.get("gini@3", "A").value == pytest.approx(3 / (4 * 3))
    # Arm B shows a once, d twice: sorted 0, 0, 1, 2: −3·0 − 1·0 + 1·1 + 3·2 = 7.
    assert replayed.get("gini@3", "B").value == pytest.approx(7 / (4 * 3))


def test_auc_without_a_pair_is_left_out_and_counted(replayed: ReplayResult) -> None:
    # r1: a (relevant) above b and c: both pairs correct.
    a = replayed.get("auc", "A")
    assert a.value == pytest.approx(1.0)
    # r2 has no relevant item (skipped); r3's only item is relevant: no pair.
    b = replayed.get("auc", "B")
    assert b.value is None and b.status == "undefined"
    assert b.left_out["lists_without_pairs"] == 1
    assert b.left_out["lists_without_relevant"] == 1


def test_auc_without_a_pair_in_evaluate(tmp_path: Path) -> None:
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,rank",
        [("u1", "a", 1), ("u1", "b", 2), ("u2", "b", 1), ("u2", "c", 2), ("u3", "d", 1)],
    )
    # u1: a relevant above b, the only pair -> 1. u2: its relevant x is not listed,
    # u3: every listed item is relevant: no (relevant, non-relevant) pair in either.
    truth = write_csv(
        tmp_path / "truth.csv", "user_id,item_id", [("u1", "a"), ("u1", "z"), ("u2", "x"),
                                                    ("u3", "d")]
    )  # fmt: skip
    auc = evaluate(truth, [recs], metrics="auc").metric("auc")
    assert auc.value == pytest.approx(1.0)
    assert auc.users == 1
    assert auc.left_out["lists_without_pairs"] == 2


def test_novelty_smoothing_over_truth_users(tmp_path: Path) -> None:
    """Without a history file popularity is over the truth users (here 2)."""
    recs = write_csv(
        tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1), ("u2", "q", 1)]
    )
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "a"), ("u2", "b")])
    novelty = evaluate(truth, [recs], metrics="novelty@1").metric("novelty@1")
    # a: 1 of 2 truth users -> 1 bit; q: nobody -> 1 / (2 + 1) -> log2 3 bits.
    assert novelty.value == pytest.approx((1 + math.log2(3)) / 2)
    assert novelty.counts["slots_without_popularity"] == 1
