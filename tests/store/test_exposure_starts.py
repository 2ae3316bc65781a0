"""Each experiment's first exposure (abeval.store.experiments.exposure_starts), the
start of the analysis window the forecast's traffic is measured over: not its first
event, which may belong to the pre-period."""

from __future__ import annotations

from pathlib import Path

import pytest

from abeval.store import open_store
from abeval.store.experiments import exposure_starts
from abeval.store.ingest import ingest_file

EVENTS = """ts,user_id,experiment,arm,event_type,item_id,position,request_id
2025-01-01T08:00:00,u1,exp,control,impression,i1,1,r1
2025-01-05T09:30:00,u1,exp,control,exposure,,,
2025-01-06T10:00:00,u2,exp,treatment,exposure,,,
2025-01-07T11:00:00,u2,exp,treatment,click,i2,1,r2
2025-02-01T00:00:00,u3,bare,control,impression,i3,1,r3
"""


def _starts(url: str, folder: Path) -> dict[str, str]:
    events = folder / "events.csv"
    events.write_text(EVENTS)
    with open_store(url) as store:
        ingest_file(store, events)
        return exposure_starts(store)


def test_the_first_exposure_not_the_first_event_on_duckdb(tmp_path: Path) -> None:
    starts = _starts(str(tmp_path / "store.duckdb"), tmp_path)
    assert starts == {"exp": "2025-01-05T09:30:00"}  # bare logs no exposure


@pytest.mark.postgres
def test_the_first_exposure_not_the_first_event_on_postgres(
    postgres_database: str, tmp_path: Path
) -> None:
    assert _starts(postgres_database, tmp_path) == {"exp": "2025-01-05T09:30:00"}
