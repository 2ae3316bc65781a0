"""A decision made at an earlier look reads what a report through that day reads
(docs/metrics.md#decision): with a plan reached before today, and without a plan
once a metric reached its expected size, the frozen numbers are those of
``report --to DAY`` for that day, CUPED included, not the daily series'
cumulative point, which has no pre-period."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

import abeval
from abeval.simulate import SimulationConfig, write_events

EXPERIMENT = "look-sim"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("look")
    events = folder / "events.csv"
    config = SimulationConfig(
        experiment=EXPERIMENT,
        arms=("control", "up"),
        users=6000,
        seed=5,
        days=7,
        pre_period_days=7,
        true_ctr_lift={"up": 0.2},
        true_conversion_lift={"up": 0.0},
    )
    write_events(config, events)
    path = str(Path(folder) / "store.duckdb")
    with abeval.open(path) as store:
        assert store.ingest(events).status == "ok"
    return path


def _report(db: str, **options: Any) -> dict[str, Any]:
    with abeval.open(db) as store:
        return store.report(EXPERIMENT, offline=False, **options).to_dict()


def _day(doc: dict[str, Any], number: int) -> str:
    first = min(date.fromisoformat(p["day"][:10]) for p in doc["daily"])
    return (first + timedelta(days=number - 1)).isoformat()


def _by_metric(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["metric"]: m for m in doc["metrics"] if m["arm"] == "up"}


def test_a_plan_reached_earlier_reads_the_report_of_its_day(db: str) -> None:
    plan = {"plan_users": 100, "plan_days": 3}
    doc = _report(db, **plan)
    progress = doc["decisions"][0]["progress"]
    assert (progress["days"], progress["decided_day"]) == (7, 3)
    then = _report(db, window_to=_day(doc, 3), **plan)
    assert then["decisions"][0]["progress"]["decided_day"] is None  # its own last day
    now, that_day = _by_metric(doc), _by_metric(then)
    assert now.keys() == that_day.keys()
    for name, m in now.items():
        assert m["lift"] == pytest.approx(that_day[name]["lift"], rel=1e-12, abs=1e-15)
        assert m["interval"] == pytest.approx(that_day[name]["interval"], rel=1e-12, abs=1e-15)
        assert m["p_value"] == pytest.approx(that_day[name]["p_value"], rel=1e-12, abs=1e-15)
    # CUPED is applied at the look (the daily series would have left it out)
    assert now["ctr"]["comparison"]["cuped"] is True
    assert doc["decisions"][0]["decision"] == then["decisions"][0]["decision"]
    # the chart shows the frozen numbers at the planned look's day, not at today's
    shown = [p for p in doc["daily"] if p["shown"]]
    assert {(p["metric"], p["day"][:10]) for p in shown} == {
        (m["metric"], _day(doc, 3)) for m in doc["metrics"] if m["role"] == "primary"
    }
    for p in shown:
        assert p["relative_lift"] == now[p["metric"]]["lift"]


def test_a_metric_decided_at_its_expected_size_reads_the_report_of_that_day(db: str) -> None:
    doc = _report(db, target_mde=0.4)
    decided = {n: m for n, m in _by_metric(doc).items() if m["decided_day"] is not None}
    assert decided, "the simulation should reach an expected size before its last day"
    for name, m in decided.items():
        then = _by_metric(_report(db, window_to=_day(doc, m["decided_day"]), target_mde=0.4))
        assert m["lift"] == pytest.approx(then[name]["lift"], rel=1e-12, abs=1e-15)
        assert m["comparison"]["cuped"] == then[name]["comparison"]["cuped"]
