"""The same report on the same data is identical on DuckDB and on PostgreSQL.

The PostgreSQL server is a real one, started by the suite (tests/pgserver.py);
under CI the test fails rather than skips when it cannot start.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from abeval.analysis.online import ReportOptions, build_report
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.postgres

# Keys that name where or when the report was made, not what it found.
VOLATILE = {"generated_at", "store", "finished_at"}


def assert_same(a: Any, b: Any, path: str = "", abs_tol: float = 1e-12) -> None:
    """Equal documents: every number to a relative 1e-9 (or within ``abs_tol``)."""
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        assert set(a) == set(b), path
        for key in a:
            if key not in VOLATILE:
                assert_same(a[key], b[key], f"{path}.{key}", abs_tol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]", abs_tol)
    elif isinstance(a, float) and isinstance(b, float | int):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=abs_tol), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.slow
def test_duckdb_and_postgres_give_the_same_report(tmp_path: Path, postgres_database: str) -> None:
    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=1500, seed=3, days=5, pre_period_days=5), events)
    duck = open_store(str(tmp_path / "s.duckdb"))
    pg = open_store(postgres_database)
    try:
        s_duck = ingest_file(duck, events)
        s_pg = ingest_file(pg, events)
        assert (s_pg.inserted, s_pg.rejected) == (s_duck.inserted, s_duck.rejected)
        again = ingest_file(pg, events)
        assert (again.inserted, again.duplicates) == (0, s_duck.inserted)
        assert [e.to_dict() for e in list_experiments(pg)] == [
            e.to_dict() for e in list_experiments(duck)
        ]
        options = ReportOptions(segment="device")
        a = build_report(duck, "home-reco-v2", options).to_dict()
        b = build_report(pg, "home-reco-v2", options).to_dict()
    finally:
        duck.close()
        pg.close()
    assert a["metrics"] and a["daily"] and a["segments"]
    assert_same(a, b)


@pytest.mark.slow
def test_window_caps_and_segments_agree_on_both_engines(
    tmp_path: Path, postgres_database: str
) -> None:
    """The analysis window, outlier capping and the segment attributes are SQL that
    must mean the same on PostgreSQL as on DuckDB."""
    from abeval.errors import OptionError
    from abeval.store.sql.population import parse_bound

    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=1200, seed=5, days=6, pre_period_days=2), events)
    duck = open_store(str(tmp_path / "s.duckdb"))
    pg = open_store(postgres_database)
    options = ReportOptions(
        segment="device",
        window_from=parse_bound("2025-03-04", end=False),  # the simulation starts 03-03
        window_to=parse_bound("2025-03-06", end=True),
        caps=(("revenue_per_user", 0.95),),
    )
    try:
        ingest_file(duck, events)
        ingest_file(pg, events)
        a = build_report(duck, "home-reco-v2", options).to_dict()
        b = build_report(pg, "home-reco-v2", options).to_dict()
        messages = []
        for store in (duck, pg):
            with pytest.raises(OptionError) as caught:
                build_report(store, "home-reco-v2", ReportOptions(segment="devise", offline=False))
            messages.append(caught.value.message)
    finally:
        duck.close()
        pg.close()
    assert a["health"]["events_outside_window"] > 0 and a["caps"][0]["users_capped_total"] > 0
    assert a["segments"] and a["offline"]
    assert_same(a, b)
    assert messages[0] == messages[1]
    assert "did you mean device?" in messages[0]
