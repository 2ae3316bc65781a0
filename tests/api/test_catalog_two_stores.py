"""One metric catalog per store (docs/python.md#one-catalog-per-store): two stores
open in one process whose team metric ``engagement`` conflicts (a mean count of
add_to_cart events where higher is better in A; the share of users shown an error,
where lower is better, in B). Calls to the two stores are interleaved; each
store's report must give its own numbers (re-derived here from the rows written),
its own direction (Bayesian view, decision, verdict, guardrail sentence, colour)
and its own description, in the report object, its JSON document, its text and
its HTML page; a name only the other store knows is refused."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from html_tree import parse

import abeval
from abeval import render
from abeval.analysis.report_model import ExperimentReport, OnlineMetricResult
from abeval.errors import OptionError

EXP = "checkout"
START = np.datetime64("2025-02-03T00:00:00")
USERS = 60  # per arm

A_METRICS = """
[engagement]
kind = "mean"
event = "add_to_cart"
description = "carts per user (store A)"

[visits]
kind = "mean"
event = "visit"
"""

B_METRICS = """
[engagement]
kind = "proportion"
event = "error_shown"
lower_is_better = true
description = "share of users shown an error (store B)"

[visits]
kind = "mean"
event = "visit"

[errors_per_user]
kind = "mean"
event = "error_shown"
lower_is_better = true
"""


def _rows(kind: str, seed: int) -> tuple[list[dict[str, str]], dict[str, np.ndarray]]:
    """Exposed users in two arms with ``kind`` events after their exposure (A: a
    count of add_to_cart, more in treatment; B: error_shown, for more treatment
    users) and visits alike in both arms; and, per arm, each user's ``engagement``
    as the store's definition reads it."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, str]] = []
    value: dict[str, list[float]] = {"control": [], "treatment": []}
    for i in range(2 * USERS):
        arm = "control" if i % 2 == 0 else "treatment"
        user = f"u{i}"
        exposed = START + np.timedelta64(i * 7, "m")
        events = [("exposure", 0)]
        if kind == "add_to_cart":
            n = int(rng.poisson(1.0 if arm == "control" else 2.5))
            value[arm].append(float(n))
        else:
            shown = rng.random() < (0.1 if arm == "control" else 0.6)
            n = int(shown) * int(rng.integers(1, 3))
            value[arm].append(1.0 if n > 0 else 0.0)
        events += [(kind, 5 + k) for k in range(n)]
        events += [("visit", 30 + k) for k in range(int(rng.poisson(2.0)))]
        for event_type, minutes in events:
            ts = str(exposed + np.timedelta64(minutes, "m"))
            rows.append({"experiment": EXP, "arm": arm, "user_id": user, "ts": ts,
                         "event_type": event_type, "value": "1"})  # fmt: skip
    return rows, {arm: np.array(v) for arm, v in value.items()}


def _store(folder: Path, kind: str, seed: int) -> tuple[Any, dict[str, np.ndarray]]:
    rows, values = _rows(kind, seed)
    events = folder / "events.csv"
    with events.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    store = abeval.open(folder / "store.duckdb")
    store.ingest(events)
    return store, values


def _metric(report: ExperimentReport, name: str) -> OnlineMetricResult:
    return next(m for m in report.metrics if m.metric == name and m.arm == "treatment")


def _json_metric(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["metrics"] if m["metric"] == name and m["arm"] == "treatment")


def _check(report: ExperimentReport, values: dict[str, np.ndarray], lower: bool) -> None:
    """Numbers equal the rows', direction as the store defines ``engagement``."""
    c, t = values["control"], values["treatment"]
    doc = report.to_dict()
    assert "catalog" not in doc
    r, j = _metric(report, "engagement"), _json_metric(doc, "engagement")
    assert (r.control.users, r.treatment.users) == (USERS, USERS)
    assert (j["control"]["value"], j["treatment"]["value"]) == pytest.approx(
        (c.mean(), t.mean()), rel=1e-12
    )
    assert j["comparison"]["absolute"]["effect"] == pytest.approx(t.mean() - c.mean(), rel=1e-9)
    ddof = 0 if lower else 1  # a proportion's variance is p(1 − p), a mean's the sample one
    se = np.sqrt(c.var(ddof=ddof) / c.size + t.var(ddof=ddof) / t.size)
    assert j["comparison"]["absolute"]["se"] == pytest.approx(se, rel=1e-9)
    assert j["kind"] == ("proportion" if lower else "mean")
    assert j["bayesian"]["lower_is_better"] is lower
    assert r.lower_is_better is lower
    # the treatment raised engagement in both stores: good in A, bad in B
    assert t.mean() > c.mean() and r.significant
    (decision,) = doc["decisions"]
    assert decision["decision"] == ("roll_back" if lower else "ship")
    (verdict,) = doc["verdicts"]
    assert verdict["verdict"] == decision["decision"]
    if lower:
        assert verdict["reason"].endswith("significantly worse")


def _check_pages(report: ExperimentReport, lower: bool, description: str) -> None:
    text = render.text(report)
    word = "ROLL BACK" if lower else "SHIP"
    assert f"DECISION treatment: {word}:" in text
    assert ("significantly worse: engagement" in text) is lower
    doc = parse(render.html(report))
    row = doc.find("tr", data_metric="engagement", data_arm="treatment")
    assert ("tone-bad" if lower else "tone-good") in row.classes()
    assert row.find(data_field="label").attrs["title"] == description
    sub = row.find("span", class_="sub").clean()
    if lower:
        assert sub == "users with any error_shown / users · lower is better"
    else:
        assert sub == "count of add_to_cart / users"
    decision = doc.find("li", data_for_arm="treatment")
    assert decision.attrs["data-decision"] == ("roll_back" if lower else "ship")


def _check_guardrail(report: ExperimentReport, lower: bool) -> None:
    """``engagement`` as a guardrail: its harm is a rise in B, a drop in A."""
    j = _json_metric(report.to_dict(), "engagement")
    assert j["role"] == "guardrail" and j["bayesian"]["lower_is_better"] is lower
    text = render.text(report)
    sentence = next(line for line in text.splitlines() if "guardrail engagement" in line)
    if lower:
        assert sentence.strip() == "guardrail engagement: significantly worse"
        assert "ROLL BACK" in text
    else:
        assert "rules out any drop" in sentence
    page = render.html(report)
    assert sentence.strip().removeprefix("guardrail ") in " ".join(parse(page).clean().split())


def test_two_stores_with_conflicting_team_metrics(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    store_a, values_a = _store(tmp_path / "a", "add_to_cart", seed=3)
    store_b, values_b = _store(tmp_path / "b", "error_shown", seed=4)
    with store_a, store_b:
        (tmp_path / "a.toml").write_text(A_METRICS)
        (tmp_path / "b.toml").write_text(B_METRICS)
        store_b.add_metrics(tmp_path / "b.toml")
        store_a.add_metrics(tmp_path / "a.toml")
        for store in (store_a, store_b):  # decide on the fixed-horizon intervals
            store.set(EXP, plan_users=2 * USERS, plan_days=1)

        # each catalog is its own store's, whichever was read last
        catalog_a, catalog_b = store_a.catalog(), store_b.catalog()
        assert not catalog_a.lower_is_better("engagement")
        assert catalog_b.lower_is_better("engagement")
        assert catalog_a["engagement"].kind == "mean"
        assert catalog_b["engagement"].kind == "proportion"
        assert "errors_per_user" in catalog_b and "errors_per_user" not in catalog_a

        options: dict[str, Any] = {
            "primary": "engagement", "guardrails": [], "cuped_days": 0,
            "offline": False, "ope": False,
        }  # fmt: skip
        report_b = store_b.report(EXP, **options)
        report_a = store_a.report(EXP, **options)
        _check(report_a, values_a, lower=False)
        _check(report_b, values_b, lower=True)
        # presented after the other store's report was computed, and in turn
        _check_pages(report_b, True, "share of users shown an error (store B)")
        _check_pages(report_a, False, "carts per user (store A)")
        _check_pages(report_b, True, "share of users shown an error (store B)")

        # a name only the other store knows is refused, with the fix
        with pytest.raises(OptionError) as refused:
            store_a.report(EXP, **{**options, "primary": "errors_per_user"})
        assert refused.value.parameter == "primary"
        assert "unknown metric 'errors_per_user'" in refused.value.reason
        assert _metric(store_b.report(EXP, **{**options, "primary": "errors_per_user"}),
                       "errors_per_user").lower_is_better  # fmt: skip

        # the same metric as a guardrail, each store's way round
        as_guardrail = {**options, "primary": "visits", "guardrails": "engagement"}
        guard_a = store_a.report(EXP, **as_guardrail)
        guard_b = store_b.report(EXP, **as_guardrail)
        _check_guardrail(guard_b, lower=True)
        _check_guardrail(guard_a, lower=False)

        # planning: the rows are labelled from each store's catalog
        plan_b = store_b.plan(EXP, metric="engagement")
        plan_a = store_a.plan(EXP, metric="engagement")
        for plan in (plan_a, plan_b):
            lines = render.plan_lines(EXP, plan)
            assert lines[1].startswith("engagement (treatment): baseline ")
        assert plan_a.catalog.lower_is_better("engagement") is False
        assert plan_b.catalog.lower_is_better("engagement") is True
