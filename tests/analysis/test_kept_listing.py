"""What is kept of the whole store (issue 32 item 1). The forecast's listing of
the store's experiments (users per arm, first exposure): the same as counting
them over the events, read back without a statement over the events, counted
again after an ingest adds to an experiment, and kept beside the board's
statistics (neither replaces the other). A warm board reads every experiment's
kept parts in the same few statements whatever the number of experiments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agreement_store import LIFTS, build_store
from kept_store import EVENTS, copy_of
from sqlalchemy import event

from abeval.analysis.agreement import AgreementOptions
from abeval.analysis.agreement_board import agreement_board
from abeval.analysis.forecast_store import experiment_listing
from abeval.store import open_store
from abeval.store.experiments import exposure_starts, list_experiments
from abeval.store.ingest import ingest_file
from abeval.store.kept import count_kept


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(build_store(tmp_path_factory.mktemp("listing"), users=200))


@pytest.fixture
def db(history: Path, tmp_path: Path) -> str:
    return copy_of(history, tmp_path)


def counted(db: str) -> tuple[dict[str, Any], dict[str, str]]:
    """What the listing says, counted over the events of a store that keeps nothing."""
    with open_store(db, read_only=True) as store:
        return {e.experiment: e for e in list_experiments(store)}, exposure_starts(store)


def test_the_kept_listing_equals_the_count_and_reads_no_event(db: str) -> None:
    expected = counted(db)
    with open_store(db) as store:
        first = experiment_listing(store)
        seen: list[str] = []
        event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
        second = experiment_listing(store)
    assert first == second == expected
    assert set(expected[0]) == {*LIFTS, "bare"} and set(expected[1]) == set(expected[0])
    assert seen and [s for s in seen if EVENTS.search(s)] == []


def test_an_ingest_counts_the_listing_again(db: str, tmp_path: Path) -> None:
    more = tmp_path / "more.csv"
    more.write_text(
        "experiment,arm,user_id,ts,event_type\nexp-b,control,early-1,2024-01-02T08:00:00,exposure\n"
    )
    with open_store(db) as store:
        before = experiment_listing(store)
        ingest_file(store, more)
        after = experiment_listing(store)
    users = {a.arm: a.users for a in after[0]["exp-b"].arms}
    assert users["control"] == {a.arm: a.users for a in before[0]["exp-b"].arms}["control"] + 1
    assert after[1]["exp-b"] == "2024-01-02T08:00:00" != before[1]["exp-b"]
    assert after == counted(db)


def test_the_listing_and_the_boards_statistics_are_kept_side_by_side(db: str) -> None:
    with open_store(db) as store:
        agreement_board(store, AgreementOptions())
        experiment_listing(store)
        with store.connect() as conn:
            assert count_kept(conn, "") == 2
        agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            assert count_kept(conn, "") == 2


def test_a_warm_board_reads_its_experiments_in_the_same_statements_for_2_or_5(db: str) -> None:
    def board(names: tuple[str, ...] | None) -> tuple[list[str], Any]:
        with open_store(db) as store:
            seen: list[str] = []
            event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
            found = agreement_board(store, AgreementOptions(experiments=names))
        return seen, found

    cold = board(None)[1]
    few, _ = board(("exp-a", "exp-b"))  # kept by the cold board: read, not computed
    every, warm = board(None)
    assert len(few) == len(every) and [s for s in every if EVENTS.search(s)] == []
    assert warm.to_dict()["pairs"] == cold.to_dict()["pairs"]  # read back to the bit
