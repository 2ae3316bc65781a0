"""The report's lifts predicted by a recorded offline evaluation
(docs/metrics.md#recorded-evaluations), in JSON, text and HTML.

The hand experiment and held-out files of test_evaluate_record.py: control's
model has MRR 0.625, treatment's 0.875, paired differences 0, 1/2, 1, −1/2, so
the predicted lift of treatment is 0.25 / 0.625 = +40% with the paired t
interval divided by 0.625; online, CTR is 3/8 against 4/8 (+33.33%) and
conversion 1/3 against 2/3 (+100%). Agreement labels are checked on a simulated
experiment with a strong CTR lift and recorded rows whose intervals are chosen
by hand on either side of 0.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from html_tree import parse
from ingest_store import query, run
from scipy import stats as sps
from test_evaluate_record import (  # noqa: F401
    RR_CONTROL,
    RR_TREATMENT,
    files,
    ingest_hand,
    record,
    store,
)
from test_postgres_report import assert_same

from abeval.analysis.online import ReportOptions, build_report
from abeval.report.html import render_html
from abeval.report.text import render_text
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.evaluations import RecordedEvaluation, RecordedMetric, record_evaluation
from abeval.store.ingest import ingest_file

OPTIONS = ReportOptions(offline=False, daily=False)
SCHEMA = Path(__file__).parents[2] / "reports" / "report.schema.json"


def report(db: str, experiment: str = "hand"):  # type: ignore[no-untyped-def]
    with open_store(db, read_only=True) as s:
        return build_report(s, experiment, OPTIONS)


def validate(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


def test_nothing_recorded_leaves_the_section_out(store: str) -> None:  # noqa: F811
    r = report(store)
    doc = r.to_dict()
    validate(doc)
    assert doc["predicted"]["status"] == "none_recorded"
    assert doc["predicted"]["lifts"] == []
    assert doc["predicted"]["message"].startswith("no offline evaluation is recorded")
    assert "predicted before the test" not in render_text(r)
    page = parse(render_html(r))
    assert not page.find_all("section", id="predicted")
    assert not page.find_all("a", href="#predicted")


def hand_numbers() -> dict[str, float]:
    d = RR_TREATMENT - RR_CONTROL
    low, high = sps.ttest_rel(RR_TREATMENT, RR_CONTROL).confidence_interval(0.95)
    base = RR_CONTROL.mean()
    assert base == 0.625
    return {
        "lift": d.mean() / base,
        "se": d.std(ddof=1) / np.sqrt(4) / base,
        "low": low / base,
        "high": high / base,
    }


def test_the_section_in_json_text_and_html(store: str, files: dict[str, Path]) -> None:  # noqa: F811
    assert record(store, files).exit_code == 0
    [(eid,)] = query(store, "SELECT DISTINCT evaluation_id FROM offline_evaluations")
    r = report(store)
    doc = r.to_dict()
    validate(doc)
    p = doc["predicted"]
    want = hand_numbers()
    assert (p["status"], p["evaluation_id"], p["baseline"]) == ("ok", eid, "control")
    assert p["values_only"] == ["coverage@2"]
    assert p["warnings"] == []
    assert [(x["metric"], x["arm"], x["online_metric"]) for x in p["lifts"]] == [
        ("mrr", "treatment", "ctr"),
        ("mrr", "treatment", "conversion"),
    ]
    online = {m.metric: m.comparison.relative for m in r.metrics if m.role == "primary"}
    for x, hand_online in zip(
        p["lifts"], (4 / 8 / (3 / 8) - 1, (2 / 3) / (1 / 3) - 1), strict=True
    ):
        assert (x["control_value"], x["arm_value"], x["paired_users"]) == (0.625, 0.875, 4)
        assert x["predicted"]["value"] == pytest.approx(want["lift"])  # +40%
        assert x["predicted"]["se"] == pytest.approx(want["se"])
        assert x["predicted"]["ci"] == pytest.approx([want["low"], want["high"]])
        assert x["online"]["value"] == pytest.approx(hand_online)
        # The interval the report shows for the primary metric (corrected).
        shown = online[x["online_metric"]].interval
        assert x["online"]["ci"] == (None if shown is None else pytest.approx(list(shown)))
        # The predicted interval holds 0: nothing to agree or disagree with.
        assert want["low"] < 0 < want["high"]
        assert x["agreement"] == "inconclusive"

    text = render_text(r)
    assert f"offline evaluation {eid} (" in text
    [ctr_line] = [
        line for line in text.splitlines() if line.strip().startswith("mrr") and "CTR" in line
    ]
    hand_interval = f"[{want['low'] * 100:+.2f}%, {want['high'] * 100:+.2f}%]"
    for part in (
        "treatment",
        "0.6250",
        "0.8750",
        "+40.00%",
        hand_interval,
        "+33.33%",
        "inconclusive",
    ):
        assert part in ctr_line, (part, ctr_line)
    assert (
        "recorded with values only (no per-user paired difference, so no predicted lift): "
        "coverage@2" in text
    )

    page = parse(render_html(r))
    section = page.find("section", id="predicted")
    assert section.find("span", **{"data-field": "evaluation-id"}).clean() == eid
    assert page.find_all("a", href="#predicted")
    row = section.find(
        "tr", **{"data-metric": "mrr", "data-arm": "treatment", "data-online": "ctr"}
    )
    assert row.field("predicted-lift") == "+40.00%"
    assert row.field("predicted-interval") == hand_interval
    assert row.field("online-lift") == "+33.33%"
    assert row.field("control-value") == "0.6250"
    assert row.field("agreement") == "inconclusive"
    assert "coverage@2" in section.field("values-only")


def test_only_the_control_evaluated_warns_for_the_arm_without_a_model(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
) -> None:
    result = run(
        "evaluate", "-t", str(files["truth"]), "-r", f"control={files['control']}",
        "-m", "mrr", "--experiment", "hand", "--db", store,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    p = report(store).to_dict()["predicted"]
    assert (p["status"], p["lifts"]) == ("ok", [])
    assert p["warnings"] == ["treatment: no model of this arm was evaluated"]
    assert "!! treatment: no model of this arm was evaluated" in render_text(report(store))


def _evaluation(experiment: str, baseline: str, rows: dict[str, tuple]) -> RecordedEvaluation:
    """Recorded rows by hand: per metric the control model's value 0.5 and the
    treatment's difference with its interval."""
    other = "treatment" if baseline == "control" else "control"
    metrics: list[RecordedMetric] = []
    for name, (diff, low, high) in rows.items():
        metrics.append(RecordedMetric(baseline, name, 0.5, 0.01, 1000))
        metrics.append(
            RecordedMetric(
                other, name, 0.5 + diff, 0.01, 1000, baseline, diff, 0.02, low, high, 990
            )
        )
    return RecordedEvaluation(
        experiment, datetime(2025, 3, 1), {"gain": "linear"}, {"truth": "x"}, tuple(metrics)
    )


@pytest.fixture(scope="module")
def strong(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A simulated experiment whose treatment lifts CTR by 30%."""
    tmp = tmp_path_factory.mktemp("strong")
    events = tmp / "events.csv"
    config = SimulationConfig(
        users=3000, days=3, pre_period_days=0, seed=5, true_ctr_lift={"treatment": 0.3}
    )
    write_events(config, events)
    db = str(tmp / "s.duckdb")
    with open_store(db) as s:
        ingest_file(s, events)
    return db


def _side(ci: list[float] | None) -> int:
    return 0 if ci is None else 1 if ci[0] > 0 else -1 if ci[1] < 0 else 0


def test_agreement_labels(strong: str) -> None:
    rows = {
        "up": (0.1, 0.05, 0.15),
        "down": (-0.1, -0.15, -0.05),
        "flat": (0.01, -0.05, 0.07),
        "rmse": (-0.1, -0.15, -0.05),  # lower is better: a fall predicts a better model
    }
    with open_store(strong) as s:
        record_evaluation(s, _evaluation("home-reco-v2", "control", rows))
    # the plan of the simulated 3 days reached: the fixed-horizon basis
    with open_store(strong, read_only=True) as s:
        planned = dataclasses.replace(OPTIONS, plan_users=1, plan_days=3)
        doc = build_report(s, "home-reco-v2", planned).to_dict()
    validate(doc)
    lifts = {(x["metric"], x["online_metric"]): x for x in doc["predicted"]["lifts"]}
    ctr = lifts[("up", "ctr")]["online"]
    assert _side(ctr["ci"]) == 1  # the simulated +30% is found
    # Predicted: the difference and its interval over the control model's 0.5.
    assert lifts[("up", "ctr")]["predicted"]["value"] == pytest.approx(0.2)
    assert lifts[("up", "ctr")]["predicted"]["ci"] == pytest.approx([0.1, 0.3])
    assert lifts[("down", "ctr")]["predicted"]["ci"] == pytest.approx([-0.3, -0.1])
    assert lifts[("flat", "ctr")]["predicted"]["se"] == pytest.approx(0.04)
    assert [lifts[(m, "ctr")]["agreement"] for m in ("up", "down", "flat")] == [
        "agree",
        "disagree",
        "inconclusive",
    ]
    assert lifts[("rmse", "ctr")]["predicted"]["ci"] == pytest.approx([-0.3, -0.1])
    assert lifts[("rmse", "ctr")]["agreement"] == "agree"
    # Conversion, whatever its online result, by the same rule.
    conv = _side(lifts[("up", "conversion")]["online"]["ci"])
    expected = {1: "agree", -1: "disagree", 0: "inconclusive"}[conv]
    assert lifts[("up", "conversion")]["agreement"] == expected
    with open_store(strong, read_only=True) as s:
        page = parse(render_html(build_report(s, "home-reco-v2", planned)))
    row = page.find("tr", **{"data-metric": "down", "data-arm": "treatment", "data-online": "ctr"})
    assert row.field("agreement") == "✗ disagrees"
    assert row.field("predicted-lift") == "-20.00%"


def test_lifts_against_another_arm_are_not_compared(strong: str) -> None:
    with open_store(strong) as s:
        evaluation = _evaluation("home-reco-v2", "treatment", {"up": (0.1, 0.05, 0.15)})
        evaluation = RecordedEvaluation(
            evaluation.experiment, datetime(2030, 1, 1), evaluation.conventions,
            evaluation.fingerprints, evaluation.metrics,
        )  # fmt: skip
        record_evaluation(s, evaluation)
    r = report(strong, "home-reco-v2")
    p = r.to_dict()["predicted"]
    assert (p["status"], p["baseline"], p["lifts"]) == ("other_baseline", "treatment", [])
    assert p["message"].startswith(
        "the recorded evaluation's lifts are against 'treatment', this report's control is "
        "'control': not comparable"
    )
    said = (
        f"{p['message']}; record the evaluation again after `abeval experiment set --control`, "
        "or report with --control treatment"
    )
    assert f"  {said}" in render_text(r).splitlines()
    section = parse(render_html(r)).find("section", id="predicted")
    assert section.field("predicted-status") == said


@pytest.mark.postgres
def test_the_section_is_the_same_on_postgres(
    tmp_path: Path,
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    postgres_database: str,
) -> None:
    ingest_hand(postgres_database, tmp_path)
    for db in (store, postgres_database):
        assert record(db, files).exit_code == 0
    duck = report(store).to_dict()["predicted"]
    pg = report(postgres_database).to_dict()["predicted"]
    assert duck["status"] == "ok" and len(duck["lifts"]) == 2
    assert duck.pop("recorded_at") and pg.pop("recorded_at")  # when, not what
    assert_same(duck, pg)
