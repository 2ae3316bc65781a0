"""The report's replay skips grouping the impressions when its health counts found no
item shown twice in a request (``shown_once``). Its values must equal ``evaluate`` on
the same lists either way, and a log with a repeated impression must still be read
with the repeat counted once, at its first position."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_data import Log, evaluate_files, random_log

from abeval.analysis.evaluate import evaluate
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.replay import replay
from abeval.store import open_store
from abeval.store.ingest import ingest_file

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"

RANKING = ["precision@5", "recall@5", "ap@5", "ndcg@5", "mrr@5", "hit_rate@5"]


def _store(tmp_path: Path, log: Log):  # type: ignore[no-untyped-def]
    store = open_store(str(tmp_path / "s.duckdb"))
    with store.begin() as conn:
        log.insert(conn)
    return store


@pytest.mark.parametrize("shown_once", [False, True])
def test_the_replay_without_repeats_gives_evaluates_values_either_way(
    tmp_path: Path, shown_once: bool
) -> None:
    log, lists = random_log(11)
    store = _store(tmp_path, log)
    with store.connect() as conn:
        replayed = replay(conn, "exp", metrics=RANKING, shown_once=shown_once)
    store.close()
    recs, truth = evaluate_files(tmp_path, lists)
    evaluated = evaluate(truth, recs, metrics=RANKING)
    assert len(replayed.metrics) == len(RANKING) * 2
    for m in replayed.metrics:
        e = evaluated.metric(m.metric, m.group)
        assert m.value == pytest.approx(e.value, abs=1e-12), m.metric
        assert (m.users, m.lists) == (e.users, e.lists), m.metric


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
