"""Recorded offline evaluations (migration 0003, abeval.store.evaluations): what is
written is read back exactly, the same inputs replace their earlier recording, and
each experiment's latest evaluation wins, on DuckDB and PostgreSQL."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import text

from abeval.store import open_store
from abeval.store.evaluations import (
    RecordedEvaluation,
    RecordedMetric,
    latest_evaluations,
    record_evaluation,
)


def _evaluation(experiment: str, when: datetime, truth: str = "aaa") -> RecordedEvaluation:
    return RecordedEvaluation(
        experiment=experiment,
        recorded_at=when,
        conventions={"gain": "linear", "ap_denominator": "R"},
        fingerprints={"truth": truth, "control": "bbb", "treatment": "ccc"},
        metrics=(
            RecordedMetric("control", "ndcg@10", 0.25, 0.01, 100),
            RecordedMetric("control", "coverage@10", 0.5, None, 100),
            RecordedMetric(
                "treatment", "ndcg@10", 0.3, 0.011, 99, "control", 0.05, 0.015, 0.02, 0.08, 98
            ),
            RecordedMetric("treatment", "coverage@10", None, None, 99, "control"),
        ),
    )


def _roundtrip(db: str) -> None:
    first = _evaluation("exp", datetime(2026, 1, 1, 12))
    with open_store(db) as store:
        eid = record_evaluation(store, first)
        record_evaluation(store, first)  # the same inputs again: replaced, not doubled
        with store.connect() as conn:
            n = conn.execute(text("SELECT COUNT(*) FROM offline_evaluations")).scalar()
        assert n == 4
        got = latest_evaluations(store)
        assert set(got) == {"exp"}
        assert got["exp"].evaluation_id == eid
        # Read back ordered by arm, then metric.
        assert got["exp"].metrics == tuple(sorted(first.metrics, key=lambda m: (m.arm, m.metric)))
        assert got["exp"].conventions == first.conventions
        assert got["exp"].fingerprints == first.fingerprints
        assert got["exp"].recorded_at == first.recorded_at
        # Other inputs recorded later: the latest wins; other experiments untouched.
        later = _evaluation("exp", datetime(2026, 1, 2), truth="zzz")
        record_evaluation(store, later)
        record_evaluation(store, _evaluation("other", datetime(2025, 1, 1)))
        got = latest_evaluations(store)
        assert got["exp"].evaluation_id == later.evaluation_id != eid
        assert got["other"].experiment == "other"
        assert set(latest_evaluations(store, ["other"])) == {"other"}
        assert latest_evaluations(store, []) == {}
    treatment = got["exp"].metric("treatment", "ndcg@10")
    assert treatment is not None and treatment.difference_high == 0.08
    assert got["exp"].arms == ("control", "treatment")


def test_recorded_evaluations_roundtrip_on_duckdb(db_path: str) -> None:
    _roundtrip(db_path)


@pytest.mark.postgres
def test_recorded_evaluations_roundtrip_on_postgres(postgres_database: str) -> None:
    _roundtrip(postgres_database)


def test_recorded_lift_scales_the_paired_difference_by_the_control_value() -> None:
    from abeval.analysis.recorded_lift import recorded_lift

    e = _evaluation("exp", datetime(2026, 1, 1))
    lift = recorded_lift(e, "treatment", "ndcg@10")
    assert lift is not None and lift.status == "ok"
    # d = 0.05 over the control's 0.25; interval [0.02, 0.08] / 0.25; se 0.015 / 0.25.
    assert lift.value == pytest.approx(0.2)
    assert lift.ci == pytest.approx((0.08, 0.32))
    assert lift.se == pytest.approx(0.06)
    assert recorded_lift(e, "control", "ndcg@10") is None  # the baseline itself
    assert recorded_lift(e, "treatment", "mrr") is None  # not evaluated
    undefined = recorded_lift(e, "treatment", "coverage@10")
    assert undefined is not None and undefined.status == "no_data" and undefined.value is None
