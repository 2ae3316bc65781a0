"""Log replay: agreement with ``evaluate`` on the same lists, population rules, duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import Log, evaluate_files, random_log

from abeval.analysis.evaluate import evaluate
from abeval.analysis.replay import replay
from abeval.errors import AbevalError, NotFoundError
from abeval.metrics import Conventions
from abeval.store import open_store

METRICS = [
    "precision@3", "recall@3", "ap@3", "map@5", "ndcg@5", "ndcg", "mrr", "mrr@3", "hit_rate@5",
    "auc", "coverage@3", "gini@3", "entropy@5", "novelty@5", "diversity@5",
]  # fmt: skip


def _store(tmp_path: Path, log: Log):  # type: ignore[no-untyped-def]
    store = open_store(str(tmp_path / "s.duckdb"))
    with store.begin() as conn:
        log.insert(conn)
    return store


@pytest.mark.parametrize(
    "conventions",
    [Conventions(), Conventions(empty="zero", gain="exp2", ap_denominator="min_rk")],
)
@pytest.mark.parametrize("shown_once", [False, True])
def test_replay_agrees_with_evaluate_on_the_same_lists(
    tmp_path: Path, conventions: Conventions, shown_once: bool
) -> None:
    """Either way of reading the lists (grouping the impressions, or, as the report
    does when its health counts found no repeat, not) gives evaluate's values."""
    log, lists = random_log(7)
    store = _store(tmp_path, log)
    with store.connect() as conn:
        replayed = replay(
            conn, "exp", metrics=METRICS, conventions=conventions, shown_once=shown_once
        )
    store.close()
    recs, truth = evaluate_files(tmp_path, lists)
    evaluated = evaluate(truth, recs, metrics=METRICS, conventions=conventions)
    assert len(replayed.metrics) == len(METRICS) * 2
    for m in replayed.metrics:
        e = evaluated.metric(m.metric, m.group)
        assert m.value is not None
        assert e.value == pytest.approx(m.value, abs=1e-12), m.metric
        assert (e.users, e.lists) == (m.users, m.lists), m.metric
        if m.stats is not None:
            assert e.stats is not None
            assert e.stats.ss == pytest.approx(m.stats.ss, abs=1e-9)


def test_replay_counts_and_population(tmp_path: Path) -> None:
    log = Log()
    # u1 (arm A): two requests; u2 (arm B); u3 seen in both arms: contaminated, left out.
    for user, arm in (("u1", "A"), ("u2", "B"), ("u3", "A"), ("u3", "B")):
        log.add(arm, user, "exposure", ts="2024-01-01 00:00:00")
    log.add("A", "u1", "impression", "pre", "x", 1, ts="2023-12-31 00:00:00")  # before exposure
    log.add("A", "u1", "click", "pre", "x")
    for pos, item in enumerate(["a", "b", "c"], start=1):
        log.add("A", "u1", "impression", "r1", item, pos)
    log.add("A", "u1", "click", "r1", "b")
    for pos, item in enumerate(["a", "d"], start=1):
        log.add("A", "u1", "impression", "r2", item, pos)
    log.add("A", "u1", "purchase", "r2", "a", value=5.0)
    log.add("A", "u1", "click", "r2", "zz")  # on an item the request did not show
    for pos, item in enumerate(["a", "b"], start=1):
        log.add("B", "u2", "impression", "r3", item, pos)
        log.add("A", "u3", "impression", "r4", item, pos)
    log.add("A", "u3", "click", "r4", "a")
    store = _store(tmp_path, log)
    with store.connect() as conn:
        result = replay(conn, "exp", metrics="mrr,precision@1,ndcg@2,recall@1")
    arms = {a.arm: a for a in result.arms}
    assert (arms["A"].users, arms["A"].requests, arms["A"].impressions) == (1, 2, 5)
    assert (arms["B"].users, arms["B"].requests) == (1, 1)
    mrr = result.get("mrr", "A")
    # r1: first relevant at 2 -> 0.5; r2: at 1 -> 1; u1's mean 0.75 (the pre-exposure
    # request and contaminated u3 do not count).
    assert mrr.value == pytest.approx(0.75)
    assert (mrr.users, mrr.lists) == (1, 2)
    assert result.get("precision@1", "A").value == pytest.approx(0.5)
    # ndcg@2 of r2: purchase gain 2 at rank 1, R = 1 -> 1.0; r1: 1/log2(3).
    assert result.get("ndcg@2", "A").value == pytest.approx((1 + 1 / 1.584962500721156) / 2)
    b = result.get("mrr", "B")
    assert b.value is None and b.status == "undefined"
    assert b.left_out["lists_without_relevant"] == 1
    assert result.get("precision@1", "B").value == 0.0
    # zz in r2, x in the pre-exposure request, a in the contaminated user's r4
    assert result.relevance_pairs_not_shown == 3
    assert result.conventions["relevance"].startswith("strongest event")
    assert result.to_dict()["metrics"][0]["metric"] == "mrr"


def test_duplicate_impressions_error_then_dedupe(tmp_path: Path) -> None:
    log = Log()
    log.add("A", "u1", "exposure", ts="2024-01-01 00:00:00")
    for pos, item in enumerate(["a", "b", "a"], start=1):
        log.add("A", "u1", "impression", "r1", item, pos)
    log.add("A", "u1", "click", "r1", "b")
    store = _store(tmp_path, log)
    with store.connect() as conn:
        with pytest.raises(AbevalError) as err:
            replay(conn, "exp", metrics="mrr")
        assert err.value.message == (
            "experiment 'exp': request 'r1' shows item 'a' twice (positions 1 and 3; "
            "1 repeated impressions in all); count each item once at its first position "
            "with the convention duplicates='dedupe'"
        )
        result = replay(
            conn, "exp", metrics="mrr,auc", conventions=Conventions(duplicates="dedupe")
        )
        with pytest.raises(NotFoundError):
            replay(conn, "nope")
    assert result.get("mrr", "A").value == pytest.approx(0.5)
    assert result.get("auc", "A").value == pytest.approx(0.0)  # b below a, the only pair
    assert result.arms[0].duplicates_removed == 1
    assert "counted once" in result.warnings[0]


def test_tied_positions_count_half_in_auc(tmp_path: Path) -> None:
    log = Log()
    log.add("A", "u1", "exposure", ts="2024-01-01 00:00:00")
    for item, pos in (("a", 1), ("b", 1), ("c", 2)):
        log.add("A", "u1", "impression", "r1", item, pos)
    log.add("A", "u1", "click", "r1", "a")
    store = _store(tmp_path, log)
    with store.connect() as conn:
        result = replay(conn, "exp", metrics="auc,precision@1")
    # a ties with b (half) and beats c: (0.5 + 1) / 2.
    assert result.get("auc", "A").value == pytest.approx(0.75)
    assert result.arms[0].requests_with_tied_positions == 1
    assert any("same position" in w for w in result.warnings)


def test_a_tie_is_counted_on_the_ranks_the_metrics_use(tmp_path: Path) -> None:
    """Item a is shown at positions 1 and 2, b at 2 (and at 2 again in r2, with c):
    deduplicated, a ranks 1 and b 2 in r1, so only r2 has a tie."""
    log = Log()
    log.add("A", "u1", "exposure", ts="2024-01-01 00:00:00")
    for item, pos in (("a", 1), ("a", 2), ("b", 2)):
        log.add("A", "u1", "impression", "r1", item, pos)
    for item, pos in (("b", 2), ("c", 2)):
        log.add("A", "u1", "impression", "r2", item, pos)
    log.add("A", "u1", "click", "r1", "b")
    store = _store(tmp_path, log)
    with store.connect() as conn:
        result = replay(conn, "exp", metrics="mrr", conventions=Conventions(duplicates="dedupe"))
    assert result.arms[0].requests_with_tied_positions == 1
    assert result.arms[0].duplicates_removed == 1
    # r1: b at rank 2 -> 1/2; r2 has nothing relevant and is left out (empty=skip).
    mrr = result.get("mrr", "A")
    assert (mrr.value, mrr.lists) == (pytest.approx(0.5), 1)


def test_replay_over_a_given_population_equals_its_own(tmp_path: Path) -> None:
    """The report hands the replay the population its online pass computed; the
    replay over that table gives what the replay computes on its own."""
    from abeval.store.shared_ctes import drop
    from abeval.store.sql.online_pass import shared

    log, _ = random_log(5)
    store = _store(tmp_path, log)
    with store.connect() as conn:
        alone = replay(conn, "exp", metrics=METRICS)
        _, temporary = shared(conn, "exp", 14)
        try:
            population = next(t for t in temporary if t.endswith("_population"))
            given = replay(conn, "exp", metrics=METRICS, population=population)
        finally:
            drop(conn, temporary)
    store.close()
    assert given.arms == alone.arms
    assert len(given.metrics) == len(alone.metrics) == 2 * len(METRICS)
    for a, b in zip(given.metrics, alone.metrics, strict=True):
        assert (a.metric, a.group, a.users, a.lists) == (b.metric, b.group, b.users, b.lists)
        assert a.value == pytest.approx(b.value, abs=1e-12), a.metric
        if a.stats is not None:
            assert b.stats is not None and a.stats.n == b.stats.n
            assert a.stats.ss == pytest.approx(b.stats.ss, abs=1e-12), a.metric
