"""The presentation facts with one home each: the interval shown
(``Lift.interval``), a metric's direction (``lower_is_better`` on the metric
definitions), the tone of a result, the page shell, and the text formats of
:mod:`abeval.formatting` that the text report and the evaluation page use."""

from __future__ import annotations

import pytest

from abeval import formatting as fmt
from abeval.analysis.online_metrics import BUILTIN_CATALOG, BUILTIN_METRICS
from abeval.metrics import DEFINITIONS
from abeval.report.templates import environment, evaluation_environment
from abeval.report.tones import (
    excludes_zero,
    offline_lower_is_better,
    tone,
)
from abeval.resources import data_dir
from abeval.stats.results import Lift


def test_lift_interval_prefers_the_adjusted_one():
    raw, adjusted = (-0.01, 0.03), (-0.02, 0.04)
    assert Lift(effect=0.01, ci=raw, ci_adjusted=adjusted).interval == adjusted
    assert Lift(effect=0.01, ci=raw).interval == raw
    assert Lift(effect=None).interval is None
    # A property, not a field: the JSON document is unchanged.
    assert "interval" not in Lift(effect=0.01, ci=raw).to_dict()


def test_lower_is_better_lives_on_the_definitions():
    assert {n for n, d in DEFINITIONS.items() if d.lower_is_better} == {"rmse", "mae"}
    assert offline_lower_is_better("rmse") and offline_lower_is_better("MAE")
    assert not offline_lower_is_better("ndcg@10")
    assert not offline_lower_is_better("no_such_metric@5")
    for name, metric in BUILTIN_METRICS.items():
        assert BUILTIN_CATALOG.lower_is_better(name) is metric.lower_is_better
    assert not BUILTIN_CATALOG.lower_is_better("no_such_metric")


@pytest.mark.parametrize(
    ("significant", "effect", "lower", "expected"),
    [
        (True, 0.1, False, "good"),
        (True, -0.1, False, "bad"),
        (True, -0.1, True, "good"),
        (True, 0.1, True, "bad"),
        (True, 0.0, False, ""),
        (True, None, False, ""),
        (False, 0.1, False, ""),
    ],
)
def test_tone(significant: bool, effect: float | None, lower: bool, expected: str):
    assert tone(significant, effect, lower) == expected


def test_excludes_zero():
    assert excludes_zero((0.01, 0.2)) and excludes_zero((-0.2, -0.01))
    assert not excludes_zero((-0.01, 0.2)) and not excludes_zero(None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "n/a"),
        (0.01234567, "0.0123"),
        (1.23456, "1.235"),
        (123.456, "123.5"),
        (12345.678, "12,345.7"),
        (-250.0, "-250.0"),
    ],
)
def test_terminal_number(value: float | None, expected: str):
    assert fmt.terminal_number(value) == expected


def test_both_pages_extend_the_one_shell():
    shell = (data_dir("reports") / "base.html.j2").read_text(encoding="utf-8")
    assert "<!doctype html>" in shell and '{% include "report.css" %}' in shell
    for name in ("report.html.j2", "evaluate.html.j2"):
        page = (data_dir("reports") / name).read_text(encoding="utf-8")
        assert '{% extends "base.html.j2" %}' in page
        assert "<!doctype html>" not in page and "report.css" not in page


def test_the_pages_share_one_environment():
    base, evaluation = environment(), evaluation_environment()
    assert evaluation.loader is base.loader
    assert evaluation.autoescape is True and evaluation.undefined is base.undefined
    assert evaluation.filters["signed"] is fmt.signed
    assert "signed" not in base.filters
