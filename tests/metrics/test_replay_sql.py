"""The replay's SQL (abeval.store.sql.replay) on a tiny log, against hand counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from replay_data import Log
from sqlalchemy import text

from abeval.store import open_store
from abeval.store.database import Database
from abeval.store.sql.replay import SHARED, RepeatedImpression, open_replay
from abeval.store.sql.replay_parts import gain_case

GAINS = {"click": 1.0, "purchase": 2.0}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Database]:
    log = Log()
    for user, arm in (("u1", "A"), ("u2", "B"), ("u3", "B")):
        log.add(arm, user, "exposure", ts="2024-01-01 00:00:00")
    log.add("A", "u1", "impression", "pre", "a", 1, ts="2023-12-31 00:00:00")  # before exposure
    # r1 shows b twice (positions 2 and 3) and c at b's first position: a tie.
    for item, pos in (("a", 1), ("b", 2), ("b", 3), ("c", 2)):
        log.add("A", "u1", "impression", "r1", item, pos)
    log.add("A", "u1", "click", "r1", "b")
    log.add("A", "u1", "click", "r1", "a")
    log.add("A", "u1", "purchase", "r1", "a", value=3.0)
    log.add("A", "u1", "click", "r1", "zz")  # an item r1 did not show
    for item, pos in (("a", 1), ("d", 2)):
        log.add("B", "u2", "impression", "r2", item, pos)
    s = open_store(str(tmp_path / "s.duckdb"))
    with s.begin() as conn:
        log.insert(conn)
    yield s
    s.close()


def test_gain_case_puts_the_strongest_event_first() -> None:
    case, in_list, params = gain_case(GAINS)
    assert in_list == ":rel_type_0, :rel_type_1"
    assert params == {
        "rel_type_0": "purchase",
        "rel_gain_0": 2.0,
        "rel_type_1": "click",
        "rel_gain_1": 1.0,
    }
    assert case.index(":rel_type_0") < case.index(":rel_type_1")


def test_arm_counts_repeats_and_relevance_not_shown(store: Database) -> None:
    with store.connect() as conn, open_replay(conn, "exp", GAINS) as source:
        assert source.arm_counts() == [
            {"arm": "A", "users": 1, "users_with_requests": 1, "requests": 1,
             "impressions": 4, "duplicates": 1, "tied": 1},
            {"arm": "B", "users": 2, "users_with_requests": 1, "requests": 1,
             "impressions": 2, "duplicates": 0, "tied": 0},
        ]  # fmt: skip
        assert source.first_repeat() == RepeatedImpression("r1", "b", 2, 3)
        assert source.relevance_pairs_not_shown() == 1  # (r1, zz)
        assert source.experiment_has_events()


def test_ranked_lists_count_each_item_once_with_its_strongest_event(store: Database) -> None:
    select = (
        "SELECT grp, list_id, item_id, rank, copies, gain FROM ranked ORDER BY list_id, item_id"
    )
    with store.connect() as conn, open_replay(conn, "exp", GAINS) as source:
        rows = [tuple(r.values()) for r in source.rows("", select)]
        judged = source.rows("j AS (SELECT COUNT(*) AS n FROM judged)", "SELECT n FROM j")
        # lists and items are the integer keys of the ingest; read them as text
        keys = conn.execute(
            text("SELECT DISTINCT request_no, request_id, item_no, item_id FROM events")
        ).fetchall()
    request = {k[0]: k[1] for k in keys if k[0] is not None}
    item = {k[2]: k[3] for k in keys if k[2] is not None}
    rows = sorted((g, request[r], item[i], *rest) for g, r, i, *rest in rows)
    assert rows == [
        ("A", "r1", "a", 1, 1, 2.0),  # clicked and bought: the purchase counts
        ("A", "r1", "b", 2, 2, 1.0),
        ("A", "r1", "c", 2, 1, 0.0),
        ("B", "r2", "a", 1, 1, 0.0),
        ("B", "r2", "d", 2, 1, 0.0),
    ]
    assert judged == [{"n": 2}]


def test_impressions_before_exposure_count_only_when_asked(store: Database) -> None:
    with store.connect() as conn, open_replay(conn, "exp", GAINS, post_exposure_only=False) as s:
        a = s.arm_counts()[0]
    assert (a["arm"], a["requests"], a["impressions"]) == ("A", 2, 5)


def test_an_unknown_experiment_has_no_events_and_leaves_no_tables(store: Database) -> None:
    tables = "SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE 'abeval_replay_%'"
    with store.connect() as conn:
        with open_replay(conn, "nope", GAINS) as source:
            assert conn.execute(text(tables)).scalar() == len(SHARED)
            assert source.arm_counts() == []
            assert source.first_repeat() is None
            assert not source.experiment_has_events()
        assert conn.execute(text(tables)).scalar() == 0


def test_the_replay_caps_duckdbs_memory_and_puts_it_back(store: Database) -> None:
    setting = "SELECT current_setting('memory_limit')"
    with store.connect() as conn:
        before = conn.execute(text(setting)).scalar()
        with open_replay(conn, "nope", GAINS):
            capped = str(conn.execute(text(setting)).scalar())
            number, unit = capped.split()
            gib = float(number) * (1 if unit == "GiB" else 2**-10)
            assert unit in ("GiB", "MiB") and gib <= 1.2
        assert conn.execute(text(setting)).scalar() == before
