"""The report's offline section (issue 10, item 7): the replayed comparisons are
made and corrected as the online ones, metrics that cannot vary are kept in JSON
and hidden with a note in text and HTML, conventions go into one legend, and an
unbounded relative interval says so in every format.

Expected values come from definitions (a delta-method interval is symmetric about
the lift; recall@K is 1 for every list when K reaches the list length) and from
hand-built inputs written in the tests.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from html_tree import parse

from abeval import formatting as fmt
from abeval.analysis.offline_report import constant_reason, constant_value
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport, OfflineResult
from abeval.metrics import OfflineMetricResult
from abeval.report.html import render_html
from abeval.report.offline_view import convention_lines, left_out_lines, names, offline_view
from abeval.report.text import render_text
from abeval.simulate import SimulationConfig, write_events
from abeval.stats.fieller import UNBOUNDED
from abeval.stats.results import Comparison, Lift
from abeval.stats.sufficient import MeanStats
from abeval.store import open_store
from abeval.store.ingest import ingest_file

EXPERIMENT = "home-reco-v2"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small simulated experiment: lists of 10 items, so recall@10 is 1 everywhere."""
    tmp = tmp_path_factory.mktemp("offline")
    csv = tmp / "events.csv"
    write_events(
        SimulationConfig(users=800, seed=11, days=4, true_ctr_lift={"treatment": 0.2}), csv
    )
    with open_store(str(tmp / "store.duckdb")) as store:
        ingest_file(store, csv)
    return str(tmp / "store.duckdb")


def _report(path: str, **options: Any) -> ExperimentReport:
    with open_store(path, read_only=True) as store:
        return build_report(store, EXPERIMENT, ReportOptions(daily=False, **options))


@pytest.fixture(scope="module")
def fieller(store_path: str) -> ExperimentReport:
    return _report(store_path)


@pytest.fixture(scope="module")
def delta(store_path: str) -> ExperimentReport:
    return _report(store_path, relative_interval="delta")


# --------------------------------------------------------------------------- analysis


def test_offline_comparisons_honour_relative_interval(
    fieller: ExperimentReport, delta: ExperimentReport
) -> None:
    compared = [o for o in fieller.offline if o.comparison.status == "ok"]
    assert compared
    assert {o.comparison.relative_interval for o in fieller.offline} == {"fieller"}
    assert {o.comparison.relative_interval for o in delta.offline} == {"delta"}
    asymmetric = 0
    for o in compared:
        rel = o.comparison.relative
        assert rel.ci is not None and rel.effect is not None and o.comparison.fieller
        # Fieller's interval excludes 0 exactly when the shared p-value is below α
        assert (rel.ci[0] > 0 or rel.ci[1] < 0) == (rel.p_value < o.comparison.alpha)
        asymmetric += abs((rel.ci[0] + rel.ci[1]) / 2 - rel.effect) > 1e-9
    assert asymmetric  # not the delta method's interval
    for o in delta.offline:
        rel = o.comparison.relative
        if o.comparison.status != "ok":
            continue
        assert rel.ci is not None and rel.se is not None and rel.effect is not None
        # the delta method's interval: lift ± critical value × se, symmetric
        assert (rel.ci[0] + rel.ci[1]) / 2 == pytest.approx(rel.effect, abs=1e-12)
        assert o.comparison.fieller is None


def test_offline_comparisons_are_one_corrected_family(fieller: ExperimentReport) -> None:
    tested = [o.comparison.relative for o in fieller.offline if o.comparison.status == "ok"]
    m = len(tested)
    # Holm: the smallest p-value is multiplied by the family's size
    smallest = min(tested, key=lambda rel: rel.p_value or 1.0)
    assert smallest.p_value is not None and smallest.p_adjusted is not None
    assert smallest.p_adjusted == pytest.approx(min(1.0, m * smallest.p_value))
    assert offline_view(fieller).comparisons == m


def test_recall_at_the_list_length_is_constant_and_marked(fieller: ExperimentReport) -> None:
    by_metric = {o.metric: o for o in fieller.offline}
    recall = by_metric["recall@10"]  # lists are 10 long: every relevant item is in the top 10
    assert recall.constant and recall.control_value == recall.treatment_value == 1.0
    assert "recall@K is 1" in recall.constant_reason
    assert not by_metric["recall@5"].constant and not by_metric["ndcg@10"].constant
    doc = json.loads(json.dumps(fieller.to_dict()))
    marked = {o["metric"]: o["constant"] for o in doc["offline"]}
    assert marked["recall@10"] is True and marked["recall@5"] is False


def _result(arm: str, values: list[float]) -> OfflineMetricResult:
    stats = MeanStats.from_values(values)
    return OfflineMetricResult(
        metric="m@3", group=arm, value=stats.mean, stats=stats, users=stats.n
    )


def test_constant_value_needs_one_value_for_every_user_of_every_arm() -> None:
    same = {"control": _result("control", [1, 1, 1]), "b": _result("b", [1.0, 1.0])}
    assert constant_value(same) == 1.0
    assert "m@3 is 1 for every user of every arm" in constant_reason("m@3", same)
    varies = {"control": _result("control", [1, 1, 1]), "b": _result("b", [1.0, 0.5])}
    assert constant_value(varies) is None and constant_reason("m@3", varies) == ""
    # constant in each arm but not the same constant: the arms differ
    differ = {"control": _result("control", [0, 0]), "b": _result("b", [1, 1])}
    assert constant_value(differ) is None
    no_users = {"control": _result("control", []), "b": _result("b", [1])}
    assert constant_value(no_users) is None
    # 0.61 for each of 11,244 users, summed one by one as an engine does: Σx² − (Σx)²/n
    # is not 0 (rounding, about 2e-9) though no value differs
    total = squares = 0.0
    for _ in range(11_244):
        total, squares = total + 0.61, squares + 0.61 * 0.61
    rounded = MeanStats.from_sums(11_244, total, squares)
    assert rounded.ss > 0
    same = OfflineMetricResult(
        metric="m@3", group="b", value=rounded.mean, stats=rounded, users=11_244
    )
    assert constant_value({"control": same, "b": same}) == pytest.approx(0.61)


# --------------------------------------------------------------------------- presenters


def test_text_and_html_hide_what_cannot_vary_and_show_adjusted_p(
    fieller: ExperimentReport,
) -> None:
    text = render_text(fieller)
    section = text.split("Offline metrics replayed")[1].split("Off-policy")[0]
    recall = next(o for o in fieller.offline if o.metric == "recall@10")
    assert f"not shown: {recall.constant_reason}" in section
    assert not any(line.lstrip("* ").startswith("recall@10 ") for line in section.splitlines())
    doc = parse(render_html(fieller))
    page = doc.find(id="offline")
    assert page.find_all("tr", data_metric="recall@10") == []
    assert recall.constant_reason in page.field("hidden-metric")
    for o in offline_view(fieller).rows:
        rel = o.comparison.relative
        row = page.find("tr", data_metric=o.metric, data_arm=o.arm)
        assert row.field("interval") == fmt.interval(rel.interval)
        assert row.field("p-adjusted") == fmt.pvalue(rel.p_adjusted)
        line = next(x for x in section.splitlines() if x.lstrip("* ").startswith(o.metric + " "))
        assert line.split()[-1] == fmt.pvalue(rel.p_adjusted)
        assert fmt.interval(rel.interval) in line
        # conventions are in the legend, not on the rows
        assert "relevance" not in row.clean() and "relevance" not in line


def test_legend_states_each_convention_once(fieller: ExperimentReport) -> None:
    text = render_text(fieller)
    page = parse(render_html(fieller)).find(id="offline")
    legend = page.field("offline-legend")
    relevance = "relevance=strongest event per (request, item): purchase 2, click 1, else 0"
    assert legend.count(relevance) == 1
    assert text.count(relevance) == 1
    assert "ndcg@5/10: gain=linear" in legend and "ndcg@5/10: gain=linear" in text


def test_convention_lines_by_hand() -> None:
    results = [
        ("ndcg@5", {"cutoff": "5", "gain": "linear", "ties": "t"}),
        ("ndcg@10", {"cutoff": "10", "gain": "linear", "ties": "t"}),
        ("auc", {"cutoff": "whole list", "ties": "t"}),
    ]
    assert convention_lines(results) == [
        "every metric: ties=t",
        "ndcg@5/10: gain=linear",
        "auc: cutoff=whole list",
    ]
    assert names(["recall@5", "map@5", "recall@10", "auc"]) == "recall@5/10, map@5, auc"


def _offline(metric: str, treatment: dict[str, int], control: dict[str, int]) -> OfflineResult:
    lift = Lift(effect=0.1, se=0.01, ci=(0.08, 0.12), p_value=0.001)
    comparison = Comparison(
        status="ok", message="", method="welch", alpha=0.05, control_n=10, treatment_n=10,
        control_mean=0.5, treatment_mean=0.55, absolute=lift, relative=lift,
    )  # fmt: skip
    return OfflineResult(
        metric=metric, convention={}, arm="b", control_value=0.5, treatment_value=0.55,
        control_users=10, treatment_users=10, comparison=comparison, agrees_with="ctr",
        agreement=None, lists_left_out=treatment, control_lists_left_out=control,
    )  # fmt: skip


def test_left_out_lines_by_hand() -> None:
    rows = [
        _offline("recall@5", {"lists_without_relevant": 7}, {"lists_without_relevant": 5}),
        _offline("ndcg@5", {"lists_without_relevant": 7}, {"lists_without_relevant": 5}),
        _offline("precision@5", {"users_without_value": 0}, {}),
        _offline("auc", {"lists_without_pairs": 1200}, {}),
    ]
    assert left_out_lines(rows) == [
        "left out of recall@5, ndcg@5: lists without relevant (control 5, b 7)",
        "left out of auc: lists without pairs (b 1,200)",
    ]


def _unbounded(report: ExperimentReport) -> ExperimentReport:
    """``report`` whose first metric and first replayed metric have an unbounded
    relative interval (Fieller, the control mean cannot be told from 0)."""
    m = report.metrics[0]
    open_lift = dataclasses.replace(
        m.comparison.relative, ci=None, ci_adjusted=None, p_value=0.2, p_adjusted=0.4,
        interval_note=UNBOUNDED,
    )  # fmt: skip
    metric = dataclasses.replace(
        m, comparison=dataclasses.replace(m.comparison, relative=open_lift)
    )
    o = next(o for o in report.offline if not o.constant)
    offline = dataclasses.replace(
        o, comparison=dataclasses.replace(o.comparison, relative=open_lift)
    )
    return dataclasses.replace(
        report,
        metrics=(metric, *report.metrics[1:]),
        offline=tuple(offline if x is o else x for x in report.offline),
    )


def test_unbounded_interval_is_shown_with_its_note(fieller: ExperimentReport) -> None:
    r = _unbounded(fieller)
    m, o = r.metrics[0], next(o for o in r.offline if o.comparison.relative.ci is None)
    text = render_text(r)
    # once under each metric table holding an unbounded interval, once in the offline one
    tables = len({x.role for x in r.metrics if x.comparison.relative.interval is None}) + 1
    assert text.count(UNBOUNDED) == 2  # text: one note under the metric tables, one offline
    for name, arm in ((m.label, m.arm), (o.metric, o.arm)):
        line = next(x for x in text.splitlines() if x.lstrip("* ").startswith(f"{name} "))
        assert f" {fmt.UNBOUNDED} " in line and arm in line
    doc = parse(render_html(r))
    row = doc.find("table", data_role=m.role).find("tr", data_metric=m.metric, data_arm=m.arm)
    assert row.field("interval") == fmt.UNBOUNDED
    notes = [n.clean() for n in doc.find_all(data_field="unbounded-note")]
    assert notes.count(f"Unbounded: {UNBOUNDED}.") == tables
    offline_row = doc.find(id="offline").find("tr", data_metric=o.metric, data_arm=o.arm)
    assert offline_row.field("interval") == fmt.UNBOUNDED


def test_every_metric_hidden_leaves_the_notes(fieller: ExperimentReport) -> None:
    hidden = tuple(
        dataclasses.replace(o, constant=True, constant_reason=f"{o.metric} cannot vary")
        for o in fieller.offline
    )
    r = dataclasses.replace(fieller, offline=hidden)
    section = parse(render_html(r)).find(id="offline")
    assert section.find_all("table", class_="offline") == []
    notes = [n.clean() for n in section.find_all(data_field="hidden-metric")]
    assert notes == [f"Not shown: {o.metric} cannot vary." for o in hidden]
    assert "not shown: auc cannot vary" in render_text(r)
