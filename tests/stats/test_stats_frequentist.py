"""Welch's t test on sufficient statistics: cross-checks with scipy and statsmodels,
invariances, and degenerate inputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps
from stats_helpers import assert_json_clean
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from abeval.stats import (
    Comparison,
    CupedStats,
    Lift,
    MeanStats,
    ProportionStats,
    RatioCupedStats,
    RatioStats,
    compare,
)


def test_absolute_lift_matches_scipy_and_statsmodels_welch() -> None:
    rng = np.random.default_rng(7)
    control = rng.lognormal(0.0, 1.0, size=300)
    treatment = rng.lognormal(0.1, 1.3, size=250)
    result = compare(MeanStats.from_values(control), MeanStats.from_values(treatment), alpha=0.1)
    scipy_test = sps.ttest_ind(treatment, control, equal_var=False)
    assert result.status == "ok"
    assert math.isclose(result.absolute.p_value or -1, scipy_test.pvalue, rel_tol=1e-9)
    assert math.isclose(result.absolute.dof or -1, scipy_test.df, rel_tol=1e-9)
    low, high = scipy_test.confidence_interval(confidence_level=0.9)
    assert result.absolute.ci is not None
    assert math.isclose(result.absolute.ci[0], low, rel_tol=1e-9)
    assert math.isclose(result.absolute.ci[1], high, rel_tol=1e-9)
    # statsmodels, independently: Welch ("unequal") standard error and interval
    cm = CompareMeans(DescrStatsW(treatment), DescrStatsW(control))
    assert math.isclose(result.absolute.se or -1, cm.std_meandiff_separatevar, rel_tol=1e-9)
    sm_low, sm_high = cm.tconfint_diff(alpha=0.1, usevar="unequal")
    assert math.isclose(result.absolute.ci[0], sm_low, rel_tol=1e-9)
    assert math.isclose(result.absolute.ci[1], sm_high, rel_tol=1e-9)


@given(
    st.integers(2, 10_000),
    st.integers(2, 10_000),
    st.floats(-100, 100),
    st.floats(-100, 100),
    st.floats(0.01, 50),
    st.floats(0.01, 50),
)
def test_welch_p_value_matches_scipy_from_stats(
    n_c: int, n_t: int, mean_c: float, mean_t: float, sd_c: float, sd_t: float
) -> None:
    control = MeanStats(n_c, mean_c * n_c, sd_c**2 * (n_c - 1))
    treatment = MeanStats(n_t, mean_t * n_t, sd_t**2 * (n_t - 1))
    expected = sps.ttest_ind_from_stats(mean_t, sd_t, n_t, mean_c, sd_c, n_c, equal_var=False)
    result = compare(control, treatment)
    assert result.absolute.p_value is not None
    assert math.isclose(result.absolute.p_value, expected.pvalue, rel_tol=1e-6, abs_tol=1e-12)


def test_relative_lift_is_the_delta_method_of_the_ratio_of_means() -> None:
    """Var((ȳT − ȳC)/ȳC) by the delta method, with the gradient of ȳT/ȳC taken
    numerically rather than from the closed form."""
    control, treatment = (
        MeanStats.from_sums(500, 1000.0, 9000.0),
        MeanStats.from_sums(400, 900.0, 8000.0),
    )
    result = compare(control, treatment)
    cov = np.diag([treatment.variance / treatment.n, control.variance / control.n])
    point = np.array([treatment.mean, control.mean])
    h = 1e-6
    grad = np.array(
        [
            ((point[0] + h) / point[1] - (point[0] - h) / point[1]) / (2 * h),
            (point[0] / (point[1] + h) - point[0] / (point[1] - h)) / (2 * h),
        ]
    )
    assert result.relative.se is not None
    assert math.isclose(result.relative.se**2, grad @ cov @ grad, rel_tol=1e-6)
    assert math.isclose(result.relative.effect or 0, 2.25 / 2 - 1, rel_tol=1e-12)


def test_negative_baseline_divides_by_its_absolute_value() -> None:
    control = MeanStats.from_values([-2.0, -4.0, -3.0])
    treatment = MeanStats.from_values([-1.0, -2.0, -3.0])
    result = compare(control, treatment)
    # the treatment mean is higher (−2 > −3): a positive lift of 1/3 of |−3|
    assert result.relative.effect == pytest.approx(1 / 3)
    assert result.absolute.effect == pytest.approx(1.0)


means = st.lists(st.floats(-50, 50), min_size=2, max_size=30).filter(
    lambda v: np.ptp(np.asarray(v)) > 1e-3
)


@given(means, means)
def test_swapping_arms_negates_the_absolute_lift(a: list[float], b: list[float]) -> None:
    ab = compare(MeanStats.from_values(a), MeanStats.from_values(b))
    ba = compare(MeanStats.from_values(b), MeanStats.from_values(a))
    assert ab.absolute.effect == pytest.approx(-(ba.absolute.effect or 0), abs=1e-9)
    assert ab.absolute.se == pytest.approx(ba.absolute.se, rel=1e-9)
    assert ab.absolute.p_value == pytest.approx(ba.absolute.p_value, rel=1e-6, abs=1e-12)


positive_values = st.lists(st.floats(0.1, 50), min_size=2, max_size=30).filter(
    lambda v: np.ptp(np.asarray(v)) > 1e-3
)


@given(positive_values, positive_values, st.floats(1e-3, 1e3))
def test_scaling_a_metric_leaves_the_relative_lift_unchanged(
    a: list[float], b: list[float], c: float
) -> None:
    plain = compare(MeanStats.from_values(a), MeanStats.from_values(b))
    scaled = compare(
        MeanStats.from_values(np.asarray(a) * c), MeanStats.from_values(np.asarray(b) * c)
    )
    assert scaled.relative.effect == pytest.approx(plain.relative.effect, rel=1e-7, abs=1e-12)
    assert scaled.relative.se == pytest.approx(plain.relative.se, rel=1e-7)
    assert scaled.relative.p_value == pytest.approx(plain.relative.p_value, rel=1e-6, abs=1e-12)
    assert scaled.absolute.effect == pytest.approx(c * (plain.absolute.effect or 0), abs=1e-7)


@given(positive_values, positive_values, st.floats(1e-2, 1e2))
def test_scaling_a_ratio_numerator_leaves_its_relative_lift_unchanged(
    a: list[float], b: list[float], c: float
) -> None:
    def ratio(values: list[float], scale: float) -> RatioStats:
        v = np.asarray(values)
        return RatioStats.from_values(scale * v, 1 + np.arange(v.size) % 3)

    plain = compare(ratio(a, 1.0), ratio(b, 1.0))
    scaled = compare(ratio(a, c), ratio(b, c))
    assert scaled.relative.effect == pytest.approx(plain.relative.effect, rel=1e-7, abs=1e-12)
    assert scaled.relative.se == pytest.approx(plain.relative.se, rel=1e-6)


def test_ratio_metric_matches_welch_on_linearised_values() -> None:
    """The ratio's absolute lift and standard error equal those of the Welch test
    on each arm's linearised per-user values (m − R·d)/μd + R."""
    rng = np.random.default_rng(3)

    def arm(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
        d = rng.poisson(5, n) + 1
        return rng.binomial(d, p).astype(float), d.astype(float)

    (mc, dc), (mt, dt) = arm(400, 0.1), arm(500, 0.12)
    result = compare(RatioStats.from_values(mc, dc), RatioStats.from_values(mt, dt))

    def linear(m: np.ndarray, d: np.ndarray) -> np.ndarray:
        r = m.sum() / d.sum()
        return (m - r * d) / d.mean() + r

    lc, lt = linear(mc, dc), linear(mt, dt)
    expected = sps.ttest_ind(lt, lc, equal_var=False)
    assert result.absolute.effect == pytest.approx(lt.mean() - lc.mean(), rel=1e-12)
    assert result.absolute.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    assert result.absolute.dof == pytest.approx(expected.df, rel=1e-9)


def _assert_degenerate(result: Comparison, status: str) -> None:
    assert result.status == status
    assert result.message
    assert_json_clean(result.to_dict())
    json.dumps(result.to_dict(), allow_nan=False)


@pytest.mark.parametrize(
    ("control", "treatment", "status"),
    [
        (MeanStats.from_values([]), MeanStats.from_values([1.0, 2.0]), "empty_arm"),
        (MeanStats.from_values([1.0, 2.0]), MeanStats(0, 0.0, 0.0), "empty_arm"),
        (MeanStats.from_values([1.0]), MeanStats.from_values([1.0, 2.0]), "too_few_users"),
        (MeanStats.from_values([3.0, 3.0]), MeanStats.from_values([1.0, 1.0]), "zero_variance"),
        (
            ProportionStats.from_counts(100, 0),
            ProportionStats.from_counts(100, 0),
            "zero_variance",
        ),
        (MeanStats.from_values([0.0, 0.0]), MeanStats.from_values([1.0, 2.0]), "zero_baseline"),
        (MeanStats.from_values([-1.0, 1.0]), MeanStats.from_values([1.0, 2.0]), "zero_baseline"),
        (
            RatioStats.from_values([0.0, 0.0], [0.0, 0.0]),
            RatioStats.from_values([1.0, 2.0], [3.0, 3.0]),
            "zero_denominator",
        ),
        (
            RatioStats.from_values([], []),
            RatioStats.from_values([1.0, 2.0], [3.0, 3.0]),
            "empty_arm",
        ),
        (MeanStats(3, math.nan, 1.0), MeanStats.from_values([1.0, 2.0]), "invalid_input"),
        (MeanStats(3, 1.0, math.inf), MeanStats.from_values([1.0, 2.0]), "invalid_input"),
        (MeanStats(3, 1.0, -1.0), MeanStats.from_values([1.0, 2.0]), "invalid_input"),
        (
            ProportionStats.from_counts(10, 12),  # more successes than users
            ProportionStats.from_counts(10, 3),
            "invalid_input",
        ),
        (
            CupedStats.from_values([], []),
            CupedStats.from_values([1.0, 2.0], [1.0, 1.0]),
            "empty_arm",
        ),
        (
            RatioCupedStats.from_values([1.0], [1.0], [1.0], [1.0]),
            RatioCupedStats.from_values([1.0, 2.0], [1.0, 1.0], [1.0, 2.0], [1.0, 1.0]),
            "too_few_users",
        ),
    ],
)
@pytest.mark.parametrize("sequential", [False, True])
def test_degenerate_inputs_give_a_status_not_an_exception(
    control: MeanStats, treatment: MeanStats, status: str, sequential: bool
) -> None:
    _assert_degenerate(compare(control, treatment, sequential=sequential), status)


@pytest.mark.parametrize("big", [1e-300, 1e150, 1e300, 1.7e308])
def test_extreme_magnitudes_never_raise_nor_give_nan(big: float) -> None:
    pairs = [
        (MeanStats(3, big, big), MeanStats(3, -big, big)),
        (MeanStats(2, big, big), MeanStats(2, 0.0, 1.0)),
        (RatioStats(3, big, big, 1e-300, 1.0, 0.5), RatioStats(3, 1.0, 1.0, big, big, 0.0)),
    ]
    for control, treatment in pairs:
        for sequential in (False, True):
            result = compare(control, treatment, sequential=sequential)  # type: ignore[arg-type]
            assert_json_clean(result.to_dict())
            if result.status != "ok":
                assert result.message


def test_degenerate_results_keep_what_is_defined() -> None:
    zero_baseline = compare(MeanStats.from_values([0, 0, 0]), MeanStats.from_values([1, 2, 3]))
    assert zero_baseline.absolute.p_value is not None  # the absolute test still runs
    assert zero_baseline.relative.effect is None and zero_baseline.relative.se is None
    constant = compare(MeanStats.from_values([3, 3]), MeanStats.from_values([1, 1]))
    assert constant.absolute.effect == -2 and constant.absolute.se is None
    assert constant.relative.effect == pytest.approx(-2 / 3)
    too_few = compare(MeanStats.from_values([4.0]), MeanStats.from_values([1.0, 2.0]))
    assert too_few.control_mean == 4.0 and too_few.absolute.effect is None
    # a constant zero treatment: the relative lift has no delta-method variance ...
    control, treatment = MeanStats.from_values([1, 2, 3]), MeanStats.from_values([0, 0, 0])
    to_zero = compare(control, treatment, relative_interval="delta")
    assert to_zero.status == "zero_variance"
    assert to_zero.absolute.p_value is not None and to_zero.relative.se is None
    # ... but Fieller's interval is defined: (D − rB)² ≤ c²(V_D − 2rC + r²V_B) with
    # D = −2, B = 2, V_D = V_B = −C = var(control)/12, c = t(0.975, 11)
    control = MeanStats.from_values([1, 2, 3] * 4)
    treatment = MeanStats.from_values([0] * 12)
    fieller = compare(control, treatment)
    assert fieller.status == "ok" and fieller.message == ""
    v, c2 = np.var([1, 2, 3] * 4, ddof=1) / 12, sps.t.ppf(0.975, 11) ** 2
    roots = sorted(np.roots([4 - c2 * v, -2 * (-4 + c2 * v), 4 - c2 * v]).real)
    assert fieller.relative.ci == pytest.approx((roots[0], roots[1]))
    assert fieller.relative.p_value == fieller.absolute.p_value


def test_mixing_kinds_of_statistics_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        compare(MeanStats.from_values([1, 2]), RatioStats.from_values([1, 2], [1, 1]))
    with pytest.raises(ValueError):
        compare(MeanStats.from_values([1, 2]), MeanStats.from_values([1, 2]), alpha=1.5)


def test_to_dict_is_json_ready() -> None:
    result = compare(MeanStats.from_values([1.0, 2.0, 4.0]), MeanStats.from_values([2.0, 5.0]))
    plain = result.to_dict()
    assert_json_clean(plain)
    absolute = plain["absolute"]
    assert isinstance(absolute, dict) and absolute["ci"] == list(result.absolute.ci or ())
    assert json.loads(json.dumps(plain, allow_nan=False)) == plain


def test_results_sanitise_numbers_when_built() -> None:
    quarter: float = np.float32(0.25)  # type: ignore[assignment]
    lift = Lift(effect=np.float64(0.5), se=math.nan, ci=(1.0, math.inf), p_value=quarter)
    assert lift.se is None and lift.ci is None
    assert type(lift.effect) is float and lift.p_value == 0.25
    one, two = np.int64(1), np.int64(2)
    plain = Lift(effect=None, ci=(one, two)).to_dict()  # type: ignore[arg-type]
    ci = plain["ci"]
    assert isinstance(ci, list) and ci == [1, 2] and all(type(v) is int for v in ci)
    assert_json_clean(plain)
