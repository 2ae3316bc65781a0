"""One basis, everywhere (issue 34, items 1 and 6): on simulated experiments with
a significant, a flat and a harmful arm, and guardrails with and without a
margin, every presenter shows each metric with the interval and direction of the
decision's basis: the decision's inputs, the verdicts, the text tables, the HTML
page, the JSON, the chart's last point, the off-policy online lift and the API's
frame. Which interval that is (always-valid, group-sequential or fixed-horizon) is
checked against the definitions (docs/metrics.md#sequential-testing), computed
here with scipy (the group-sequential one: wider than the fixed, same centre).
"""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import scipy.stats as sps
from html_tree import Node, parse

import abeval
from abeval.formatting import interval, pct
from abeval.simulate import SimulationConfig, simulate_with_target, write_events

EXPERIMENT = "basis-sim"
ARMS = ("control", "up", "flat", "down")
GUARDRAILS = "impressions_per_user:5%,revenue_per_user"
TARGET = "target_propensities.parquet"

# case: (the report's options, the decision's basis, the interval basis)
CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    # a target MDE the test can reach, so that the spending has an end in sight
    "no plan": ({"target_mde": 0.2}, "sequential_no_plan", "group_sequential"),
    "--sequential": ({"sequential": True}, "sequential_requested", "always_valid"),
    "plan reached": ({"plan_users": 100, "plan_days": 7}, "fixed_plan_reached", "fixed_horizon"),
    "plan not reached": ({"plan_users": 10**8}, "plan_not_reached", "fixed_horizon"),
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("one-basis")
    events = folder / "events.csv"
    config = SimulationConfig(
        experiment=EXPERIMENT,
        arms=ARMS,
        users=8000,
        seed=11,
        days=7,
        pre_period_days=7,
        true_ctr_lift={"up": 0.25, "flat": 0.0, "down": -0.25},
        true_conversion_lift={"up": 0.0, "flat": 0.0, "down": 0.0},
    )
    write_events(config, events)
    path = str(Path(folder) / "store.duckdb")
    with abeval.open(path) as store:
        assert store.ingest(events).status == "ok"
    return path


@pytest.fixture(scope="module", params=list(CASES))
def case(request: pytest.FixtureRequest, db: str) -> dict[str, Any]:
    options, decision_basis, basis = CASES[request.param]
    with abeval.open(db, read_only=True) as store:
        report = store.report(EXPERIMENT, guardrails=GUARDRAILS, offline=False, **options)
    return {
        "report": report,
        "doc": report.to_dict(),
        "text": abeval.render.text(report),
        "page": parse(abeval.render.html(report)),
        "decision_basis": decision_basis,
        "basis": basis,
    }


def _better(m: dict[str, Any]) -> bool:
    return (m["lift"] > 0) != m["bayesian"]["lower_is_better"]


def _direction(m: dict[str, Any]) -> str:
    if not m["significant"]:
        return "flat"
    return "better" if _better(m) else "worse"


def test_the_simulation_has_a_significant_a_flat_and_a_harmful_metric(
    case: dict[str, Any],
) -> None:
    ctr = {m["arm"]: m for m in case["doc"]["metrics"] if m["metric"] == "ctr"}
    assert _direction(ctr["up"]) == "better"
    assert _direction(ctr["flat"]) == "flat"
    if case["basis"] != "group_sequential":  # its early looks spend little of α
        assert _direction(ctr["down"]) == "worse"


def test_json_carries_the_basis_and_its_interval_first(case: dict[str, Any]) -> None:
    doc, basis = case["doc"], case["basis"]
    for m in doc["metrics"]:
        keys = list(m)
        assert keys.index("basis") < keys.index("comparison")
        rel = m["comparison"]["relative"]
        shown = rel["ci_adjusted"] if rel["ci_adjusted"] is not None else rel["ci"]
        assert m["basis"] == basis
        assert m["lift"] == rel["effect"] and m["interval"] == shown
        assert m["p_value"] == rel["p_adjusted"]
        if m["p_value"] is not None:  # the p-value, the star and the interval agree
            assert m["significant"] == (m["p_value"] < doc["settings"]["alpha"])
        method = "sequential" if basis == "always_valid" else "welch"
        assert m["comparison"]["method"] == method
        reference = m["reference_fixed_horizon"]
        if basis != "fixed_horizon":
            assert reference["method"] == "welch"
        else:
            assert reference is None
        if m["decided_day"] is None:  # today's numbers, the reference's effect
            if reference is not None:
                assert reference["relative"]["effect"] == pytest.approx(m["lift"])
        else:  # decided at its expected size: that day's numbers (the chart's point
            # of that day), today's fixed horizon for reference
            assert basis == "group_sequential"
            if m["role"] == "primary":  # (the chart draws the primary metrics)
                point = _point(doc, m)
                assert point["shown"] and point["relative_lift"] == m["lift"]
        if m["interval"] is not None:
            excludes_zero = m["interval"][0] > 0 or m["interval"][1] < 0
            assert m["significant"] == excludes_zero
    assert doc["settings"]["method"] == ("sequential" if basis == "always_valid" else "fixed")


def _point(doc: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    """The daily point a metric is shown at: its decided day's, else the last."""
    points = [p for p in doc["daily"] if (p["metric"], p["arm"]) == (m["metric"], m["arm"])]
    if m["decided_day"] is None:
        return max(points, key=lambda p: p["day"])
    first = min(date.fromisoformat(p["day"][:10]) for p in doc["daily"])
    (point,) = [
        p
        for p in points
        if (date.fromisoformat(p["day"][:10]) - first).days + 1 == m["decided_day"]
    ]
    return point


def test_the_shown_interval_is_the_one_the_basis_defines(case: dict[str, Any]) -> None:
    """The absolute CTR lift of the significant arm: the fixed-horizon interval is
    the Welch one, effect ± t(dof)·se; the always-valid one is the normal-mixture
    confidence sequence, effect ± se·c(n) (docs/metrics.md#sequential-testing)."""
    doc, basis = case["doc"], case["basis"]
    alpha, tuning = doc["settings"]["alpha"], doc["settings"]["tuning_n"] or 5000.0
    m = next(m for m in doc["metrics"] if m["metric"] == "ctr" and m["arm"] == "up")
    shown = m["comparison"]["absolute"]
    fixed = (m["reference_fixed_horizon"] or m["comparison"])["absolute"]
    effect, se = fixed["effect"], fixed["se"]
    t = sps.t.ppf(1 - alpha / 2, fixed["dof"])
    welch = (effect - t * se, effect + t * se)
    n = m["comparison"]["control_n"] + m["comparison"]["treatment_n"]
    rho2 = (-2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))) / tuning
    v = n * rho2
    c = math.sqrt(2 * (v + 1) / v * math.log(math.sqrt(v + 1) / alpha))
    always_valid = (effect - c * se, effect + c * se)
    assert fixed["ci"] == pytest.approx(welch, rel=1e-6)
    expected = always_valid if basis == "always_valid" else welch
    if basis == "group_sequential":  # wider than the fixed one: the spending's c_K > t
        if m["decided_day"] is None:  # (else that day's, wider than that day's fixed)
            assert shown["effect"] == pytest.approx(effect)
            assert shown["ci"][1] - shown["ci"][0] > welch[1] - welch[0]
    else:
        assert shown["effect"] == pytest.approx(effect)
        assert shown["ci"] == pytest.approx(expected, rel=1e-6)
    assert c > t  # the always-valid interval is the wider one


def test_the_decision_reads_what_the_tables_show(case: dict[str, Any]) -> None:
    doc = case["doc"]
    metrics = {(m["arm"], m["metric"]): m for m in doc["metrics"]}
    for d in doc["decisions"]:
        assert d["basis"] == case["decision_basis"]
        for i in (*d["primaries"], *d["guardrails"]):
            m = metrics[d["arm"], i["metric"]]
            assert i["interval"] == m["interval"]
            assert i["relative_effect"] == m["lift"]
            assert i["direction"] == _direction(m)
        if case["decision_basis"] == "plan_not_reached":
            assert d["decision"] in {"keep_running", "invalid"}


def test_no_verdict_contradicts_the_basis(case: dict[str, Any]) -> None:
    doc = case["doc"]
    metrics = {(m["arm"], m["metric"]): m for m in doc["metrics"]}
    decided = {d["arm"]: d["decision"] for d in doc["decisions"]}
    for v in doc["verdicts"]:
        m = metrics[v["arm"], v["metric"]]
        assert interval(m["interval"]) in v["reason"]
        if v["verdict"] == "ship":
            assert _direction(m) == "better" and decided[v["arm"]] == "ship"
        if _direction(m) == "flat":
            assert v["verdict"] not in {"ship", "roll_back"}
        if _direction(m) == "worse":
            assert v["verdict"] == "roll_back"
    up = next(v for v in doc["verdicts"] if v["arm"] == "up" and v["metric"] == "ctr")
    down = next(v for v in doc["verdicts"] if v["arm"] == "down" and v["metric"] == "ctr")
    # the harmful arm is shown worse under every basis (group-sequential: it
    # reached its expected size on day 2, whose report's interval excludes 0)
    assert down["verdict"] == "roll_back"
    if case["decision_basis"] != "plan_not_reached":
        assert up["verdict"] in {"ship", "keep_running"}  # keep running: a guardrail
    else:
        assert up["verdict"] == "keep_running"


def _row(text: str, m: dict[str, Any]) -> tuple[str, list[str]]:
    """The text table's row of ``m`` and the two lines after it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = line[2:].split()
        if line[2:].startswith(f"{m['label']} ") and m["arm"] in cells[len(m["label"].split())]:
            return line, lines[i + 1 : i + 3]
    raise AssertionError(f"no row for {m['label']} ({m['arm']})")


def test_text_shows_the_basis_interval_and_the_other_only_for_reference(
    case: dict[str, Any],
) -> None:
    doc, text, basis = case["doc"], case["text"], case["basis"]
    method = next(line for line in text.splitlines() if line.startswith("METHOD "))
    assert ("always-valid intervals" in method) == (basis == "always_valid")
    assert ("group-sequential intervals" in method) == (basis == "group_sequential")
    assert ("fixed horizon: the plan of" in method) == (basis == "fixed_horizon")
    for m in doc["metrics"]:
        row, (after, then) = _row(text, m)
        assert row.startswith("*" if m["significant"] else " ")
        assert f"{pct(m['lift'])} " in row and interval(m["interval"]) in row
        if m["decided_day"] is not None:  # which day the row's numbers are from
            assert after == (
                f"      decided on day {m['decided_day']}, when it reached its expected size: "
                "the lift, interval and p-value shown are that day's; today's fixed-horizon "
                "interval is for reference"
            )
            after = then
        reference = m["reference_fixed_horizon"]
        if reference is None:
            assert "for reference" not in after
        else:
            fixed = reference["relative"]
            shown = fixed["ci_adjusted"] if fixed["ci_adjusted"] is not None else fixed["ci"]
            today = "today's " if m["decided_day"] is not None else ""
            assert after.startswith(f"      for reference, {today}fixed horizon:")
            assert interval(shown) in after and "*" not in after
    for line in text.splitlines():
        if line.startswith(("DECISION", "VERDICT")):
            assert "for reference" not in line


def test_html_shows_the_basis_interval_everywhere(case: dict[str, Any]) -> None:
    doc, page, basis = case["doc"], case["page"], case["basis"]
    method = " ".join(n.clean() for n in page.find("header", id="summary").find_all("dd"))
    assert ("Always-valid intervals" in method) == (basis == "always_valid")
    assert ("Group-sequential intervals" in method) == (basis == "group_sequential")
    for m in doc["metrics"]:
        row = page.find("tr", data_metric=m["metric"], data_arm=m["arm"])
        assert row.attrs["data-basis"] == basis
        assert row.field("interval") == interval(m["interval"])
        lift = row.field("lift")
        assert pct(m["lift"]) in lift and ("(significant" in lift) == m["significant"]
        assert ("tone-" in row.attrs.get("class", "")) == m["significant"]
        details = row.find_all("details", data_field="reference-fixed-horizon")
        assert len(details) == (1 if basis != "fixed_horizon" else 0)
        decided = row.find_all(data_field="decided-day")
        assert len(decided) == (m["decided_day"] is not None)
        if decided:
            assert decided[0].clean().startswith(f"decided on day {m['decided_day']}, when")
    for v in doc["verdicts"]:
        card = page.find("li", data_metric=v["metric"], data_arm=v["arm"])
        assert card.attrs["data-verdict"] == v["verdict"]
        m = next(x for x in doc["metrics"] if (x["metric"], x["arm"]) == (v["metric"], v["arm"]))
        assert interval(m["interval"]) in card.clean()
    for d in doc["decisions"]:
        card = page.find("li", data_for_arm=d["arm"])
        assert card.attrs["data-decision"] == d["decision"]
        assert card.find(data_field="decision-basis").attrs["data-basis"] == d["basis"]


def test_the_chart_ends_where_the_tables_stand(case: dict[str, Any]) -> None:
    doc, page = case["doc"], case["page"]
    for m in doc["metrics"]:
        if m["role"] != "primary":
            continue
        end = _point(doc, m)
        assert end["shown"] and end["relative_lift"] == m["lift"] and end["ci"] == m["interval"]
        figure = page.find("figure", data_metric=m["metric"], data_arm=m["arm"])
        assert pct(m["lift"]) in _all_text(figure)
    earlier = [p for p in doc["daily"] if p["shown"]]
    assert len(earlier) == sum(m["role"] == "primary" for m in doc["metrics"])


def _all_text(node: Node) -> str:
    """The text of ``node`` and its attributes (an SVG's labels)."""
    return " ".join([node.text(), *(v for n in node.iter() for v in n.attrs.values())])


@pytest.fixture(scope="module")
def two_arms(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A two-arm store and the file of each arm's probabilities on the other's
    requests, so that both off-policy directions are estimated."""
    folder = tmp_path_factory.mktemp("one-basis-ope")
    config = SimulationConfig(experiment=EXPERIMENT, users=3000, seed=12, days=7)
    table, target = simulate_with_target(config)
    write_events(table, folder / "events.csv")
    write_events(target, folder / TARGET, quote=False)
    path = str(folder / "store.duckdb")
    with abeval.open(path) as store:
        assert store.ingest(folder / "events.csv").status == "ok"
    return path, folder / TARGET


@pytest.mark.parametrize("name", ["no plan", "plan reached"])
def test_off_policy_online_lift_is_the_shown_ctr(two_arms: tuple[str, Path], name: str) -> None:
    db, target = two_arms
    options, _, basis = CASES[name]
    with abeval.open(db, read_only=True) as store:
        report = store.report(EXPERIMENT, offline=False, target_propensities=target, **options)
    doc = report.to_dict()
    ope = doc["ope"]
    assert ope["status"] == "ok" and len(ope["directions"]) == 2, ope["message"]
    (m,) = (m for m in doc["metrics"] if m["metric"] == "ctr")
    assert m["basis"] == basis
    low, high = m["interval"]
    for d in ope["directions"]:
        online = d["online_lift"]
        if d["source"] == "control":
            assert online["value"] == m["lift"] and online["ci"] == m["interval"]
        else:  # the same comparison read the other way: control over treatment
            assert online["value"] == pytest.approx(1 / (1 + m["lift"]) - 1)
            assert online["ci"] == pytest.approx([1 / (1 + high) - 1, 1 / (1 + low) - 1])
        assert (pct(online["value"]) + " " + interval(online["ci"])) in abeval.render.text(report)


def test_the_api_frame_reads_the_same_interval(case: dict[str, Any]) -> None:
    doc, report = case["doc"], case["report"]
    rows = report.rows()
    assert len(rows) == len(doc["metrics"])
    for row, m in zip(rows, doc["metrics"], strict=True):
        assert (row["metric"], row["arm"]) == (m["metric"], m["arm"])
        assert row["basis"] == case["basis"]
        assert row["relative_effect"] == m["lift"]
        assert [row["interval_low"], row["interval_high"]] == m["interval"]
        assert row["significant"] == m["significant"]
    for r in report.metrics:
        assert r.interval == r.comparison.relative.interval and r.basis == case["basis"]
