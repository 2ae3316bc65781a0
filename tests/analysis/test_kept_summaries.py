"""Kept summaries (issue 32.1, abeval.analysis.kept): what a session reads of the
events is kept in the store once computed and read back equal to a recompute
(to 1e-9), never after a change it depends on; a read-only store reads kept
summaries and writes none; a store held elsewhere keeps nothing and fails no read."""

from __future__ import annotations

import math
import shutil
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from agreement_store import LIFTS, build_store
from json_close import close

import abeval
from abeval.analysis import session as session_module
from abeval.analysis.agreement import AgreementOptions
from abeval.analysis.agreement_board import agreement_board
from abeval.analysis.kept import CannotKeep, decode, encode
from abeval.stats.results import Lift
from abeval.store import open_store
from abeval.store.kept import count_kept

#: The parts a report keeps: what it reads of the events, the comparisons, the
#: power rows and the comparisons under the decision's basis.
REPORT_PARTS = ("observed", "offline", "ope", "compared", "power", "judged")


def numbers(board: Any) -> dict[str, Any]:
    """The board's pairs and summary rows (what depends on the events)."""
    d = board.to_dict()
    return {"pairs": d["pairs"], "summary": d["summary"], "experiments": d["experiments"]}


def test_the_json_reads_back_every_float_exactly() -> None:
    floats = [0.1 + 0.2, 1e-308, 5e-324, -0.0, 1.7976931348623157e308, 2.0 / 3.0, 12345678.9]
    value = {
        ("ctr", "clicks"): floats,
        "t": (1, True, None, "x"),
        "s": frozenset({"a", "b"}),
        "when": datetime(2025, 3, 3, 9, 30, tzinfo=UTC),
        "day": date(2025, 3, 3),
        "lift": Lift(effect=0.1 + 0.2, se=1 / 3, ci=(0.01, 0.59)),
    }
    back = decode(encode(value))
    assert back == value
    assert [x.hex() for x in back[("ctr", "clicks")]] == [x.hex() for x in floats]
    assert isinstance(back["t"], tuple) and isinstance(back["lift"], Lift)
    odd = decode(encode([math.inf, -math.inf, math.nan]))
    assert odd[:2] == [math.inf, -math.inf] and math.isnan(odd[2])


def test_what_the_json_cannot_hold_is_refused() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Foreign:
        x: float

    with pytest.raises(CannotKeep):
        encode(Foreign(1.0))
    with pytest.raises(CannotKeep):
        encode(object())
    with pytest.raises(CannotKeep):  # only abeval's dataclasses are made
        decode('{"c":["os.path:join",{}]}')


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("kept")
    return Path(build_store(workdir, users=600))


def fresh(history: Path, tmp_path: Path, name: str = "store.duckdb") -> str:
    target = tmp_path / name
    shutil.copy(history, target)
    return str(target)


def test_a_kept_board_equals_the_recompute(history: Path, tmp_path: Path) -> None:
    kept_db, recompute_db = fresh(history, tmp_path), fresh(history, tmp_path, "other.duckdb")
    with open_store(kept_db) as store:
        first = agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            kept = count_kept(conn)
        # every experiment's four parts, and the board's statistics
        assert kept == 4 * (len(LIFTS) + 1) + 1
        again = agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            assert count_kept(conn) == kept
    with open_store(recompute_db, read_only=True) as store:
        recomputed = agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            assert count_kept(conn) == 0  # a read-only store keeps nothing
    assert numbers(again) == numbers(first)  # read back as it was computed, to the bit
    close(numbers(again), numbers(recomputed))
    assert [(s.signal, s.source, s.rank) for s in again.summary] == [
        (s.signal, s.source, s.rank) for s in recomputed.summary
    ]


def test_a_read_only_store_reads_kept_parts_without_the_events(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = fresh(history, tmp_path)
    with abeval.open(db) as store:
        before = store.report("exp-c").to_dict()
    with open_store(db) as database, database.connect() as conn:
        assert count_kept(conn, "exp-c") == len(REPORT_PARTS)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the events were read again")

    for name in ("observe", "replayed_offline", "ope_results"):
        monkeypatch.setattr(session_module, name, refused)
    with abeval.open(db, read_only=True) as store:
        after = store.report("exp-c").to_dict()
    for key in ("metrics", "offline", "ope", "health"):
        close(after[key], before[key], key)


def test_a_changed_setting_is_never_read_from_a_stale_summary(
    history: Path, tmp_path: Path
) -> None:
    db, other = fresh(history, tmp_path), fresh(history, tmp_path, "other.duckdb")
    with abeval.open(db) as store:
        whole = store.report("exp-c").to_dict()
        store.set("exp-c", window_from="2025-03-04")
        windowed = store.report("exp-c").to_dict()
    with abeval.open(other) as store:
        store.set("exp-c", window_from="2025-03-04")
        recomputed = store.report("exp-c").to_dict()
    users = [a["users"] for a in windowed["arms"]]
    assert users != [a["users"] for a in whole["arms"]]  # the window changed the numbers
    assert users == [a["users"] for a in recomputed["arms"]]
    for key in ("metrics", "offline", "ope", "health"):
        close(windowed[key], recomputed[key], key)
    with open_store(db) as database, database.connect() as conn:
        assert count_kept(conn, "exp-c") == len(REPORT_PARTS)  # the stale parts were replaced


def test_an_ingest_into_the_experiment_is_never_read_from_a_stale_summary(
    history: Path, tmp_path: Path
) -> None:
    """The parts are keyed by the experiment's row, not its events: an ingest that
    adds events to it rewrites the row (its last change), so they are computed again."""
    db, other = fresh(history, tmp_path), fresh(history, tmp_path, "other.duckdb")
    more = tmp_path / "more.csv"
    more.write_text(
        "experiment,arm,user_id,ts,event_type\n"
        + "".join(f"exp-c,control,late-{u},2025-03-05T10:00:00,exposure\n" for u in range(7))
    )
    with abeval.open(db) as store:
        before = store.report("exp-c").to_dict()
        store.ingest(more)
        after = store.report("exp-c").to_dict()
    with abeval.open(other) as store:
        store.ingest(more)
        recomputed = store.report("exp-c").to_dict()
    users = {a["arm"]: a["users"] for a in after["arms"]}
    assert users["control"] == {a["arm"]: a["users"] for a in before["arms"]}["control"] + 7
    assert users == {a["arm"]: a["users"] for a in recomputed["arms"]}
    for key in ("metrics", "offline", "ope", "health"):
        close(after[key], recomputed[key], key)


def test_a_store_held_elsewhere_keeps_nothing_and_reads(history: Path, tmp_path: Path) -> None:
    db = fresh(history, tmp_path)
    with open_store(db, read_only=True) as other, abeval.open(db) as store:
        report = store.report("exp-d")  # the writer's lock cannot be had: skipped
        assert report.to_dict()["metrics"]
        with other.connect() as conn:
            assert count_kept(conn) == 0
    with abeval.open(db) as store:
        store.report("exp-d")
    with open_store(db, read_only=True) as database, database.connect() as conn:
        assert count_kept(conn, "exp-d") == len(REPORT_PARTS)


@pytest.mark.slow
@pytest.mark.postgres
def test_kept_summaries_on_postgresql(postgres_database: str, tmp_path: Path) -> None:
    build_store(tmp_path, db=postgres_database, users=400)
    with open_store(postgres_database, read_only=True) as store:
        recomputed = agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            assert count_kept(conn) == 0
    with open_store(postgres_database) as store:
        agreement_board(store, AgreementOptions())
        with store.connect() as conn:
            assert count_kept(conn) == 4 * (len(LIFTS) + 1) + 1
    with open_store(postgres_database, read_only=True) as store:
        kept = agreement_board(store, AgreementOptions())
    close(numbers(kept), numbers(recomputed))
