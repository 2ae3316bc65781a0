"""The HTML report: structure, numbers, escaping and self-containment.

The rendered page is parsed with :mod:`html.parser` into a small tree and checked
against ``ExperimentReport.to_dict()``: expected values always come from the JSON
document, formatted with the same filters the template uses (and, for the main
numbers, parsed back and compared with the raw JSON value).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from abeval import formatting as fmt
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport, OfflineResult
from abeval.report.html import build_context, default_path, environment, render_html
from abeval.report.offline_view import offline_status_text
from abeval.report.text import render_text
from abeval.resources import data_dir
from abeval.simulate import SimulationConfig, write_events
from abeval.stats.results import Comparison, Lift
from abeval.store import open_store
from abeval.store.experiments import set_settings
from abeval.store.ingest import ingest_file

MARKUP_EXPERIMENT = "exp<script>alert(\"x\")</script> & 'quoted'"
MARKUP_ARM = "treat\"<b>ment</b> & 'b'"
MARKUP_DEVICES = {"<i>mobile</i>": 0.5, "desk\"top&'": 0.3, "tab<script>x</script>": 0.2}


# --------------------------------------------------------------------------- parsing

from html_tree import VOID, Node, assert_self_contained, css_urls, parse  # noqa: E402, F401

# --------------------------------------------------------------------------- stores


def _store(tmp: Path, config: SimulationConfig) -> Any:
    csv = tmp / "events.csv"
    write_events(config, csv)
    store = open_store(str(tmp / "store.duckdb"))
    ingest_file(store, csv)
    return store


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ExperimentReport]:
    """A plain report (with a segment breakdown and a strong CTR lift, so that some
    results are significant), the same store after recording a 90/10 split (a
    sample ratio mismatch), and a store whose names contain markup."""
    out = {}
    store = _store(
        tmp_path_factory.mktemp("plain"),
        SimulationConfig(users=3000, seed=7, true_ctr_lift={"treatment": 0.25}),
    )
    try:
        out["plain"] = build_report(store, "home-reco-v2", ReportOptions(segment="device"))
        set_settings(store, "home-reco-v2", None, "control=90,treatment=10")
        out["srm"] = build_report(store, "home-reco-v2", ReportOptions())
    finally:
        store.close()
    store = _store(
        tmp_path_factory.mktemp("markup"),
        SimulationConfig(
            users=3000,
            seed=8,
            experiment=MARKUP_EXPERIMENT,
            arms=("control", MARKUP_ARM, "third<i>arm</i>"),
            true_ctr_lift={MARKUP_ARM: 0.25, "third<i>arm</i>": -0.25},
            segments={"device": MARKUP_DEVICES},
        ),
    )
    try:
        out["markup"] = build_report(
            store, MARKUP_EXPERIMENT, ReportOptions(segment="device", sequential=True)
        )
    finally:
        store.close()
    return out


@pytest.fixture(scope="module")
def pages(reports: dict[str, ExperimentReport]) -> dict[str, str]:
    return {name: render_html(r) for name, r in reports.items()}


@pytest.fixture(scope="module")
def docs(pages: dict[str, str]) -> dict[str, Node]:
    return {name: parse(page) for name, page in pages.items()}


def _row(doc: Node, table_role: str, metric: str, arm: str) -> Node:
    table = doc.find("table", data_role=table_role)
    return table.find("tr", data_metric=metric, data_arm=arm)


def _percent(text: str) -> float:
    """``+1.32%`` → 0.0132 (strips arrows and screen-reader words)."""
    match = re.search(r"[+-]?\d+(?:\.\d+)?%", text)
    assert match, text
    return float(match.group(0).rstrip("%")) / 100


# --------------------------------------------------------------------------- structure


SECTIONS = ("summary", "decision", "health", "metrics", "guardrails", "secondary", "over-time",
            "power", "offline", "segments", "methodology")  # fmt: skip


def test_every_section_is_present(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    doc = docs["plain"]
    ids = {n.attrs["id"] for n in doc.iter() if "id" in n.attrs}
    assert set(SECTIONS) <= ids
    methodology = doc.find(id="methodology")
    assert methodology.tag == "details" and "open" not in methodology.attrs
    # The SQL is shown verbatim in a <pre>.
    pre = methodology.find("pre")
    assert pre.text() == reports["plain"].methodology.sql
    assert doc.find("title").clean() == f"{reports['plain'].experiment} · abeval experiment report"


def test_sections_follow_the_report_contents(docs: dict[str, Node]):
    # No segment breakdown asked: no segment section.
    ids = {n.attrs.get("id") for n in docs["srm"].iter()}
    assert "segments" not in ids
    assert "over-time" in ids and "power" in ids


def test_header_shows_arms_users_and_settings(
    docs: dict[str, Node], reports: dict[str, ExperimentReport]
):
    for name in ("plain", "markup"):
        doc, d = docs[name], reports[name].to_dict()
        header = doc.find("header", id="summary")
        assert header.find("h1").text() == d["experiment"]
        for arm in d["arms"]:
            item = header.find("li", data_arm=arm["arm"])
            assert item.field("users") == fmt.count(arm["users"])
            assert item.find(class_="arm-name").text() == arm["arm"]
        assert header.field("total-users") == fmt.count(sum(a["users"] for a in d["arms"]))
        text = header.clean()
        assert f"α = {d['settings']['alpha']}" in text
        assert d["settings"]["unit"] in text
        assert f"abeval {d['abeval_version']}" in text
        # the method box names the basis in force and how its intervals are made
        sequential = d["settings"]["method"] == "sequential"
        assert ("Always-valid intervals" in text) == sequential
        assert ("confidence sequences" in text) == sequential
        first_day = min(p["day"] for p in d["daily"])
        last_day = max(p["day"] for p in d["daily"])
        assert f"{first_day} → {last_day}" in text


def test_verdicts_match_the_json(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    for name in ("plain", "srm", "markup"):
        d = reports[name].to_dict()
        section = docs[name].find(id="decision")
        items = [n for n in section.iter() if n.tag == "li" and "data-verdict" in n.attrs]
        assert len(items) == len(d["verdicts"]) > 0
        for v in d["verdicts"]:
            item = section.find("li", data_metric=v["metric"], data_arm=v["arm"])
            assert item.attrs["data-verdict"] == v["verdict"]
            assert item.find(class_="verdict-word").clean() == fmt.words(v["verdict"])
            assert item.find(class_="verdict-reason").clean() == " ".join(v["reason"].split())


# --------------------------------------------------------------------------- numbers


def test_metric_rows_match_the_json(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    for name in ("plain", "markup"):
        d = reports[name].to_dict()
        for m in d["metrics"]:
            row = _row(docs[name], m["role"], m["metric"], m["arm"])
            rel = m["comparison"]["relative"]
            adjusted = rel["alpha_adjusted"] is not None
            ci = rel["ci_adjusted"] if adjusted else rel["ci"]
            assert row.find(data_field="label").clean() == m["label"]
            assert fmt.pct(rel["effect"]) in row.field("lift")
            assert _percent(row.field("lift")) == pytest.approx(rel["effect"], abs=5e-5)
            if adjusted and ci is None:  # an adjusted interval without an end, said so
                assert row.field("interval") == "unbounded"
                continue
            assert row.field("interval") == fmt.interval(ci)
            lo, hi = (_percent(x) for x in row.field("interval").strip("[]").split(","))
            assert (lo, hi) == (pytest.approx(ci[0], abs=5e-5), pytest.approx(ci[1], abs=5e-5))
            assert row.field("p") == fmt.pvalue(rel["p_value"])
            if row.field("p") == "<0.0001":
                assert rel["p_value"] < 1e-4
            else:
                assert float(row.field("p")) == pytest.approx(rel["p_value"], abs=5e-5)
            assert row.field("p-adjusted") == fmt.pvalue(rel["p_adjusted"])
            chance = m["bayesian"]["relative"]["chance_to_win"]
            assert row.field("chance") == fmt.share(chance)
            for arm in ("control", "treatment"):
                v = m[arm]
                assert row.field(f"{arm}-raw") == (
                    f"{fmt.count(v['numerator'])} / {fmt.count(v['denominator'])}"
                )
                shown = row.field(f"{arm}-value")
                if shown.endswith("%"):
                    assert float(shown.rstrip("%")) / 100 == pytest.approx(v["value"], abs=5e-5)
                else:
                    assert float(shown.replace(",", "")) == pytest.approx(v["value"], rel=1e-3)


def test_colour_only_where_significant_after_correction(
    docs: dict[str, Node], reports: dict[str, ExperimentReport]
):
    tones = {"good": 0, "bad": 0}
    for name in ("plain", "markup"):
        for m in reports[name].to_dict()["metrics"]:
            row = _row(docs[name], m["role"], m["metric"], m["arm"])
            coloured = {c for c in row.classes() if c.startswith("tone-")}
            if not m["significant"]:
                assert not coloured, (name, m["metric"], m["arm"])
                assert not row.find_all(class_="arrow")
                continue
            effect = m["comparison"]["absolute"]["effect"]
            better = effect < 0 if m["bayesian"]["lower_is_better"] else effect > 0
            expected = "good" if better else "bad"
            assert coloured == {f"tone-{expected}"}
            bar = row.find("svg", role="img")
            assert expected in bar.classes()
            tones[expected] += 1
    # The simulations have a strong CTR gain (plain, markup) and a strong CTR loss
    # (markup's third arm): both colours are exercised.
    assert tones["good"] >= 1 and tones["bad"] >= 1


def test_tables_by_role(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    d = reports["plain"].to_dict()
    for role in ("primary", "guardrail", "secondary"):
        table = docs["plain"].find("table", data_role=role)
        rows = [r for r in table.iter() if r.tag == "tr" and "data-metric" in r.attrs]
        expected = [(m["metric"], m["arm"]) for m in d["metrics"] if m["role"] == role]
        assert [(r.attrs["data-metric"], r.attrs["data-arm"]) for r in rows] == expected
    order = [n.attrs["id"] for n in docs["plain"].iter() if n.attrs.get("id") in SECTIONS]
    assert order.index("metrics") < order.index("guardrails") < order.index("secondary")


def test_health_table(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    for name in ("plain", "srm"):
        h = reports[name].to_dict()["health"]
        table = docs[name].find(id="health")
        srm_row = table.find("tr", data_check="Sample ratio")
        assert fmt.pvalue(h["srm"]["p_value"]) in srm_row.clean()
        for users in h["srm"]["users"]:
            assert fmt.count(users) in srm_row.clean()
        assert ("check-fail" in srm_row.classes()) == h["srm"]["flagged"]
        several = table.find("tr", data_check="Users in several arms").clean()
        assert f"{fmt.count(h['users_analysed'])} of {fmt.count(h['users_seen'])}" in several
        integrity = table.find("tr", data_check="Event integrity").clean()
        assert f"{fmt.count(h['clicks_without_impression'])} clicks without" in integrity
        assert f"{fmt.count(h['duplicate_impressions'])} duplicate impressions" in integrity
        fresh = table.find("tr", data_check="Data freshness").clean()
        assert fmt.when(h["last_ts"]) in fresh


def test_power_matches_the_json(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    d = reports["plain"].to_dict()
    section = docs["plain"].find(id="power")
    assert d["power"]
    for p in d["power"]:
        card = section.find("article", data_metric=p["metric"], data_arm=p["arm"])
        assert card.field("mde") == "±" + fmt.share(p["detectable"]["mde_relative"], 2)
        assert card.field("needed") == fmt.count(p["needed_for_target"]["total_users"])
        if p["more_days_needed"]:
            assert card.field("more-days") == fmt.fixed(p["more_days_needed"], 1)


def test_daily_charts(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    d = reports["plain"].to_dict()
    section = docs["plain"].find(id="over-time")
    series = {(p["metric"], p["arm"]) for p in d["daily"]}
    figures = [n for n in section.iter() if n.tag == "figure" and "data-metric" in n.attrs]
    # two charts per metric and arm: the cumulative lift and each day's alone
    kinds = {"cumulative": "relative_lift", "day": "day_lift"}
    charted = [(f.attrs["data-metric"], f.attrs["data-arm"], f.attrs["data-kind"]) for f in figures]
    assert sorted(charted) == sorted((*s, k) for s in series for k in kinds)
    for figure in figures:
        key = kinds[figure.attrs["data-kind"]]
        points = [
            p
            for p in d["daily"]
            if (p["metric"], p["arm"]) == (figure.attrs["data-metric"], figure.attrs["data-arm"])
        ]
        svg = figure.find("svg")
        assert svg.find("path", class_="band").attrs["d"]
        line = svg.find("path", class_="line").attrs["d"]
        assert line.count(",") == sum(p[key] is not None for p in points)
        assert svg.find("line", class_="zero")
        final = max(points, key=lambda p: p["day"])
        assert svg.find("text", class_="last-label").text() == fmt.pct(final[key])
        assert fmt.pct(final[key]) in svg.find("title").text()
    users = section.find(id="users-chart")
    bars = users.find_all("rect")
    assert len(bars) == len({p["day"] for p in d["daily"]}) * len(d["arms"])
    last_day = max(p["day"] for p in d["daily"])
    total = {a["arm"]: a["users"] for a in d["arms"]}
    # The daily points carry cumulative users: the last day equals the arm totals.
    final = next(p for p in d["daily"] if p["day"] == last_day)
    assert (final["control_users"], final["treatment_users"]) == (
        total["control"],
        total["treatment"],
    )
    assert f"control {fmt.count(total['control'])} in all" in users.find("title").text()


def test_segments(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    for name in ("plain", "markup"):
        d = reports[name].to_dict()
        section = docs[name].find(id="segments")
        rows = [n for n in section.iter() if n.tag == "tr" and "data-segment" in n.attrs]
        assert len(rows) == len(d["segments"]) > 0
        for g in d["segments"]:
            row = section.find(
                "tr", data_segment=g["value"], data_metric=g["metric"], data_arm=g["arm"]
            )
            rel = g["comparison"]["relative"]
            assert row.find(class_="segment-value").text() == g["value"]
            assert _percent(row.field("lift")) == pytest.approx(rel["effect"], abs=5e-5)
            adjusted = rel["alpha_adjusted"] is not None
            assert row.field("interval") == (
                "unbounded"  # the adjusted interval has no end: never the unadjusted
                if adjusted and rel["ci_adjusted"] is None
                else fmt.interval(rel["ci_adjusted"] if adjusted else rel["ci"])
            )
            assert row.field("p-adjusted") == fmt.pvalue(rel["p_adjusted"])
        warnings = section.find_all(data_field="segment-warning")
        if d["segment_warning"]:
            assert warnings[0].clean() == d["segment_warning"]
        else:
            assert not warnings
    # 3 devices x 2 primary metrics x 2 treatment arms: the many-slices warning shows.
    assert reports["markup"].segment_warning


def test_offline_status_when_empty(docs: dict[str, Node], reports: dict[str, ExperimentReport]):
    r = reports["plain"]
    section = docs["plain"].find(id="offline")
    if not r.offline:
        assert section.field("offline-status") == offline_status_text(r.offline_status)
    assert offline_status_text("not_requested") == "not requested (--no-offline)"


def _offline_result(metric: str, arm: str, agrees_with: str) -> OfflineResult:
    lift = Lift(effect=0.0425, se=0.01, ci=(0.0229, 0.0621), p_value=0.0004)
    comparison = Comparison(
        status="ok", message="", method="welch", alpha=0.05, control_n=1500,
        treatment_n=1500, control_mean=0.2, treatment_mean=0.2085,
        absolute=Lift(effect=0.0085, se=0.002, ci=(0.0046, 0.0124), p_value=0.0004),
        relative=lift,
    )  # fmt: skip
    return OfflineResult(
        metric=metric,
        convention={"k": 10, "relevance": "<b>click</b> & 'purchase'"},
        arm=arm,
        control_value=0.2,
        treatment_value=0.2085,
        control_users=1500,
        treatment_users=1500,
        comparison=comparison,
        agrees_with=agrees_with,
        agreement=None,
        lists_left_out={'lists of <i>item</i> "x"': 3},
    )


def test_offline_results_render_from_the_dataclass(reports: dict[str, ExperimentReport]):
    r = reports["markup"]
    arm = r.arms[1].arm
    offline = (_offline_result("ndcg@10<script>", arm, "ctr"),)
    page = render_html(dataclasses.replace(r, offline=offline))
    doc = parse(page)
    section = doc.find(id="offline")
    row = section.find("tr", data_metric="ndcg@10<script>", data_arm=arm)
    assert row.find(class_="metric-name").text() == "ndcg@10<script>"
    assert fmt.pct(0.0425) in row.field("lift")
    assert row.field("interval") == fmt.interval((0.0229, 0.0621))
    assert row.field("p") == fmt.pvalue(0.0004)
    # The online lift, the conventions and what was left out: once, in the legend.
    online = next(m for m in r.metrics if m.metric == "ctr" and m.arm == arm)
    assert f"{arm} {fmt.pct(online.comparison.relative.effect)}" in section.field("online-lift")
    # Replayed from the same clicks as CTR: no agreement label, a plain note instead.
    assert "agree" not in row.clean()
    assert "same logged lists and clicks as CTR" in section.field("replay-note")
    legend = section.field("offline-legend")
    assert "relevance=<b>click</b> & 'purchase'" in legend
    assert f'lists of <i>item</i> "x" ({arm} 3)' in legend
    assert "relevance" not in row.clean() and "lists of" not in row.clean()
    _assert_no_markup_injected(page, doc)


# --------------------------------------------------------------------------- safety


def _assert_no_markup_injected(page: str, doc: Node) -> None:
    tags = {n.tag for n in doc.iter()}
    assert not tags & {"script", "b", "i", "iframe", "object", "embed", "link", "img"}
    assert "<script" not in page.lower()
    assert "<b>" not in page and "<i>" not in page


def test_names_with_markup_are_text(docs: dict[str, Node], pages: dict[str, str]):
    doc, page = docs["markup"], pages["markup"]
    _assert_no_markup_injected(page, doc)
    assert doc.find("h1").text() == MARKUP_EXPERIMENT
    assert MARKUP_EXPERIMENT in doc.find("title").text()
    names = [n.text() for n in doc.iter() if "arm-name" in n.classes()]
    assert MARKUP_ARM in names and "third<i>arm</i>" in names
    # Attribute values survive quoting: the parser gives back the exact names.
    assert doc.find("li", data_arm=MARKUP_ARM)
    values = {n.text() for n in doc.iter() if "segment-value" in n.classes()}
    assert values == set(MARKUP_DEVICES)
    code = [n.text() for n in doc.find(id="methodology").iter() if n.tag == "code"]
    assert MARKUP_EXPERIMENT in code


def test_problem_text_is_escaped_in_the_banner(reports: dict[str, ExperimentReport]):
    r = reports["plain"]
    problem = "<script>alert(1)</script> & \"broken\" 'logging'"
    health = dataclasses.replace(r.health, problems=(problem,))
    page = render_html(dataclasses.replace(r, health=health))
    doc = parse(page)
    assert problem in doc.find(id="alert").clean()
    _assert_no_markup_injected(page, doc)


EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


@pytest.mark.parametrize("name", ["plain", "srm", "markup"])
def test_self_contained(name: str, pages: dict[str, str], docs: dict[str, Node]):
    page, doc = pages[name], docs[name]
    assert len(page.encode("utf-8")) < 1_000_000
    css = assert_self_contained(doc)
    assert "@import" not in css and "@font-face" not in css
    assert css_urls(css) == []
    assert all(not EXTERNAL.match(u) for u in css_urls(page))
    assert "@media print" in css


def test_failed_health_check_shows_the_banner_first(
    docs: dict[str, Node], reports: dict[str, ExperimentReport]
):
    r = reports["srm"]
    assert r.health.srm.flagged  # the recorded 90/10 split does not match a 50/50 test
    doc = docs["srm"]
    body = doc.find("body")
    first = next(c for c in body.children if isinstance(c, Node))
    assert first.attrs.get("id") == "alert" and first.attrs.get("role") == "alert"
    text = first.clean()
    for problem in r.health.problems:
        assert " ".join(problem.split()) in text
    assert "biased" in text
    check = doc.find("tr", data_check="Sample ratio")
    assert check.find(class_="state").text() == "FAIL"
    assert {v.verdict for v in r.verdicts} == {"invalid"}
    assert not docs["plain"].find_all(id="alert")


def test_banner_for_problems_other_than_the_sample_ratio(reports: dict[str, ExperimentReport]):
    r = reports["plain"]
    assert not r.health.srm.flagged
    health = dataclasses.replace(r.health, problems=("1,204 users (6.0%) were seen in 2 arms.",))
    doc = parse(render_html(dataclasses.replace(r, health=health)))
    alert = doc.find(id="alert")
    assert "1,204 users (6.0%) were seen in 2 arms." in alert.clean()
    assert "verdicts are marked invalid" not in alert.clean()


# --------------------------------------------------------------------------- plumbing


def test_environment_is_strict_and_escapes():
    env = environment()
    assert env.autoescape is True
    from jinja2 import StrictUndefined

    assert env.undefined is StrictUndefined
    loader_paths = [Path(p) for p in env.loader.searchpath]  # type: ignore[union-attr]
    assert loader_paths == [data_dir("reports")]
    for name in ("report.html.j2", "_macros.html.j2", "report.css"):
        assert (data_dir("reports") / name).is_file()


def test_context_documents_every_key():
    from abeval.report.html import ReportContext

    doc = ReportContext.__doc__ or ""
    for field in dataclasses.fields(ReportContext):
        assert f"``{field.name}``" in doc, field.name


def test_context_is_built_from_the_report(reports: dict[str, ExperimentReport]):
    r = reports["plain"]
    ctx = build_context(r)
    assert ctx.report is r
    assert ctx.total_users == sum(a.users for a in r.arms)
    assert [t.role for t in ctx.tables] == ["primary", "guardrail", "secondary"]
    assert [row.result for t in ctx.tables for row in t.rows] == sorted(
        r.metrics, key=lambda m: ["primary", "guardrail", "secondary"].index(m.role)
    )
    assert not ctx.alerts


FORMAT_CASES: list[tuple[Callable[..., str], tuple[Any, ...], str]] = [
    (fmt.pct, (0.013156,), "+1.32%"),
    (fmt.pct, (-0.0006717,), "-0.07%"),
    (fmt.pct, (None,), "n/a"),
    (fmt.share, (0.88215,), "88.2%"),
    (fmt.interval, ((-0.0117, 0.038),), "[-1.17%, +3.80%]"),
    (fmt.pvalue, (0.40486,), "0.4049"),
    (fmt.pvalue, (3e-7,), "<0.0001"),
    (fmt.count, (30357.0,), "30,357"),
    (fmt.count, (100054.34000000008,), "100,054.34"),
    (fmt.metric_value, (0.0505874, True), "5.06%"),
    (fmt.metric_value, (40.88857, False), "40.889"),
    (fmt.exact, (21963252.34234236,), "21,963,252.3423"),
    (fmt.when, ("2025-03-16T23:40:28.952000",), "2025-03-16 23:40 UTC"),
    (fmt.short_day, ("2025-03-03",), "Mar 3"),
    (fmt.words, ("keep_running",), "Keep running"),
]


def test_text_report_shows_the_interval_the_page_shows(reports: dict[str, ExperimentReport]):
    r = reports["plain"]
    assert r.offline
    lifts = [o.comparison.relative for o in r.offline]
    assert any(rel.ci_adjusted not in (None, rel.ci) for rel in lifts)
    lines = render_text(r).splitlines()
    for o, rel in zip(r.offline, lifts, strict=True):
        found = [x for x in lines if x.lstrip("* ").split()[:2] == [o.metric, o.arm]]
        if o.constant:  # cannot vary: hidden, with a note
            assert not found and any(o.constant_reason in x for x in lines)
            continue
        assert fmt.interval(rel.interval) in found[0]
        assert found[0].split()[-1] == fmt.pvalue(rel.p_adjusted)


@pytest.mark.parametrize(("func", "args", "expected"), FORMAT_CASES)
def test_formatters(func: Callable[..., str], args: tuple[Any, ...], expected: str):
    assert func(*args) == expected


def test_cli_writes_the_default_path(tmp_path: Path, reports: dict[str, ExperimentReport]):
    store = _store(tmp_path, SimulationConfig(users=400, seed=3, days=3, pre_period_days=0))
    store.close()
    result = subprocess.run(
        [sys.executable, "-m", "abeval", "report", "-e", "home-reco-v2", "--db",
         str(tmp_path / "store.duckdb")],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    path = tmp_path / default_path("home-reco-v2")
    assert path == tmp_path / "reports" / "home-reco-v2.html"
    doc = parse(path.read_text(encoding="utf-8"))
    assert doc.find("h1").text() == "home-reco-v2"
    assert default_path(MARKUP_EXPERIMENT).parent == Path("reports")
    assert "<" not in default_path(MARKUP_EXPERIMENT).name
