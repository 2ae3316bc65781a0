"""Every case of data/gbstats_reference.json, through the public API, to 5 decimals.

The reference values were computed with GrowthBook's gbstats and re-derived with
scipy (data/README.md says where they come from); the relative lifts are
gbstats' delta-method ones (``relative_interval="delta"``); a value given with more
decimals is matched to all of them, and the Welch degrees of freedom to the 2
decimals given.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from abeval.stats import (
    Comparison,
    CupedStats,
    MeanStats,
    ProportionStats,
    adjust_pvalues,
    compare,
    compare_bayesian,
    srm_test,
)


def close(actual: float | None, expected: float, *, min_decimals: int = 5) -> bool:
    """|actual − expected| within half a unit of the expected value's last decimal,
    counting at least ``min_decimals`` decimals."""
    assert actual is not None
    exponent = Decimal(str(expected)).as_tuple().exponent
    assert isinstance(exponent, int)
    decimals = max(-exponent, min_decimals)
    return abs(actual - expected) <= 0.5 * 10.0**-decimals + 1e-12


def mean_stats(arm: dict[str, float]) -> MeanStats:
    return MeanStats.from_sums(arm["n"], arm["sum"], arm["sum_squares"])


def assert_lift(result: Comparison, scale: str, expected: dict[str, Any]) -> None:
    lift = getattr(result, scale)
    assert close(lift.effect, expected["effect"])
    if "se" in expected:
        assert close(lift.se, expected["se"])
    if "ci" in expected:
        assert lift.ci is not None
        assert close(lift.ci[0], expected["ci"][0])
        assert close(lift.ci[1], expected["ci"][1])
    if "p" in expected:
        assert close(lift.p_value, expected["p"])


def test_mean_welch(reference_cases: dict[str, Any]) -> None:
    case = reference_cases["mean-welch"]
    result = compare(
        mean_stats(case["control"]), mean_stats(case["treatment"]), relative_interval="delta"
    )
    assert result.status == "ok"
    assert_lift(result, "relative", case["expected"]["rel"])
    assert_lift(result, "absolute", case["expected"]["abs"])
    for lift in (result.absolute, result.relative):
        assert close(lift.dof, case["expected"]["welch_dof"], min_decimals=0)


def test_proportion_small(reference_cases: dict[str, Any]) -> None:
    case = reference_cases["proportion-small"]
    control = ProportionStats.from_counts(case["control"]["n"], case["control"]["sum"])
    treatment = ProportionStats.from_counts(case["treatment"]["n"], case["treatment"]["sum"])
    result = compare(control, treatment, relative_interval="delta")
    assert result.status == "ok"
    assert_lift(result, "relative", case["expected"]["rel"])


def test_cuped_mean(reference_cases: dict[str, Any]) -> None:
    case = reference_cases["cuped-mean"]
    control, treatment = (CupedStats.from_sums(**case[arm]) for arm in ("control", "treatment"))
    result = compare(control, treatment, relative_interval="delta")
    assert result.status == "ok" and result.cuped
    assert close(result.theta, case["expected"]["theta"])
    assert_lift(result, "relative", case["expected"]["rel"])
    assert_lift(result, "absolute", case["expected"]["abs"])


def test_bayes_proportion(reference_cases: dict[str, Any]) -> None:
    case = reference_cases["bayes-proportion"]
    control = ProportionStats.from_counts(case["control"]["n"], case["control"]["sum"])
    treatment = ProportionStats.from_counts(case["treatment"]["n"], case["treatment"]["sum"])
    expected = case["expected"]["rel"]
    post = compare_bayesian(control, treatment, relative_interval="delta").relative
    assert close(post.mean, expected["effect"])
    assert close(post.sd, expected["sd"])
    assert post.ci is not None
    assert close(post.ci[0], expected["ci"][0]) and close(post.ci[1], expected["ci"][1])
    assert close(post.chance_to_win, expected["chance_to_win"])
    assert close(post.risk_control, expected["risk"][0])
    assert close(post.risk_treatment, expected["risk"][1])


def test_srm(reference_cases: dict[str, Any]) -> None:
    for expected in reference_cases["srm"]["expected"]:
        result = srm_test(expected["users"])
        assert result.status == "ok"
        assert close(result.p_value, expected["p"]), (expected, result.p_value)
        assert result.flagged == (expected["p"] < 0.001)


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_multiple_testing(reference_cases: dict[str, Any], method: str) -> None:
    case = reference_cases["multiple-testing"]
    adjusted = adjust_pvalues(case["p"], method)  # type: ignore[arg-type]
    for actual, expected in zip(adjusted, case["expected"][method], strict=True):
        assert close(actual, expected)
