"""The report's replay skips grouping the impressions when its health counts found no
item shown twice in a request (``shown_once``; both ways against ``evaluate`` in
test_metrics_replay.py). A log with a repeated impression must still be read with
the repeat counted once, at its first position, and one without gives the same
values."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import evaluate_files, random_log

from abeval.analysis.evaluate import evaluate
from abeval.analysis.online import ReportOptions, build_report
from abeval.store import open_store
from abeval.store.ingest import ingest_file

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"

RANKING = ["precision@5", "recall@5", "ap@5", "ndcg@5", "mrr@5", "hit_rate@5"]


@pytest.mark.parametrize("repeat", [False, True])
def test_the_report_replays_a_repeated_impression_once(tmp_path: Path, repeat: bool) -> None:
    log, lists = random_log(5)
    if repeat:
        # every list's first item shown again at the next position: the health counts
        # see the repeats, so the report must group (the first position counts)
        for arm, rows in lists.items():
            for user, item, position, _ in rows:
                if position == 1:
                    log.add(arm, user, "impression", f"req{user[1:]}", item, 2)
    path = tmp_path / "events.csv"
    cells = ("experiment", "arm", "user_id", "ts", "event_type", "request_id", "item_id")
    lines = [
        ",".join(
            [*(str(r[c] or "") for c in cells), str(r["position"] or ""), str(r["value"] or "")]
        )
        for r in log.rows
    ]
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    with open_store(str(tmp_path / "r.duckdb")) as store:
        ingest_file(store, path)
        report = build_report(
            store, "exp", ReportOptions(daily=False, offline_ks=(5,), control="A")
        )
    shown_twice = sum(1 for rows in lists.values() for r in rows if r[2] == 1) if repeat else 0
    assert report.health.duplicate_impressions == shown_twice
    recs, truth = evaluate_files(tmp_path, lists)
    compared = {r.metric: r for r in report.offline}
    shown = [n for n in (*RANKING, "map@5") if n in compared]
    assert len(shown) >= 5, sorted(compared)
    evaluated = evaluate(truth, recs, metrics=shown)
    for name in shown:
        r = compared[name]
        control = evaluated.metric(name, "A").value
        treatment = evaluated.metric(name, "B").value
        assert r.arm == "B"
        assert r.control_value == pytest.approx(control, abs=1e-12), name
        assert r.treatment_value == pytest.approx(treatment, abs=1e-12), name
