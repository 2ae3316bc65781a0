"""Data-quality counts of the report on a tiny experiment where each case is
placed by hand, with what each count must be worked out in the comments."""

from __future__ import annotations

from pathlib import Path

from abeval.analysis.online import ReportOptions, build_report
from abeval.store import open_store
from abeval.store.ingest import ingest_file

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"
ROWS = [
    # a: control, exposed 2024-03-10 10:00
    "x,A,a,2024-03-10T10:00:00,exposure,,,,",
    "x,A,a,2024-03-10T10:01:00,impression,r1,i1,1,",
    "x,A,a,2024-03-10T10:01:00,impression,r1,i2,2,",
    "x,A,a,2024-03-10T10:01:01,impression,r1,i1,1,",  # (r1, i1) again: 1 duplicate
    "x,A,a,2024-03-10T10:02:00,click,r1,i1,,",
    "x,A,a,2024-03-10T10:03:00,click,r1,i9,,",  # no impression of (r1, i9)
    "x,A,a,2024-03-10T10:04:00,purchase,r1,i1,,5",  # after the click on (r1, i1)
    "x,A,a,2024-03-10T10:05:00,purchase,r1,i2,,7",  # (r1, i2) was never clicked
    "x,A,a,2024-03-10T10:06:00,purchase,,i2,,3",  # no request: not matched at all
    # before a's exposure: 1 in the 14-day CUPED window, 1 long before it
    "x,A,a,2024-03-05T09:00:00,impression,r0,i1,1,",
    "x,A,a,2024-01-01T09:00:00,impression,r00,i1,1,",
    # b: treatment, exposed 2024-03-11, a click in the same request as a's
    "x,B,b,2024-03-11T08:00:00,exposure,,,,",
    "x,B,b,2024-03-11T08:01:00,impression,r2,i1,1,",
    "x,B,b,2024-03-11T08:02:00,click,r2,i1,,",
    "x,B,b,2024-03-11T08:02:30,click,r2,i1,,",  # a second click: not a problem
    "x,B,b,2024-03-11T07:00:00,impression,r3,i4,1,",  # before b's exposure
    # c: seen in both arms, left out: its 3 events are outside the population
    "x,A,c,2024-03-10T11:00:00,exposure,,,,",
    "x,B,c,2024-03-10T11:05:00,exposure,,,,",
    "x,B,c,2024-03-10T11:06:00,impression,r4,i1,1,",
    # d: never exposed (the experiment has exposures): outside the population
    "x,A,d,2024-03-12T09:00:00,impression,r5,i1,1,",
]


def test_each_data_quality_count(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n")
    db = str(tmp_path / "x.duckdb")
    store = open_store(db)
    ingest_file(store, path)
    report = build_report(store, "x", ReportOptions(control="A", offline=False, cuped_days=14))
    store.close()
    h = report.health
    assert (h.users_seen, h.users_analysed, h.users_in_several_arms) == (4, 2, 1)
    assert h.events == len(ROWS)
    assert h.duplicate_impressions == 1
    assert h.clicks_without_impression == 1
    assert h.purchases_without_click == 1
    assert h.events_outside_population == 3 + 1
    assert h.events_before_exposure == 2 + 1
    assert (h.first_ts, h.last_ts) == ("2024-01-01T09:00:00", "2024-03-12T09:00:00")
