"""Power and MDE against statsmodels, and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from stats_helpers import assert_json_clean
from statsmodels.stats.power import NormalIndPower, tt_ind_solve_power

from abeval.stats import (
    CupedStats,
    MeanStats,
    ProportionStats,
    compare,
    detectable_effect,
    minimum_detectable_effect,
    required_users,
)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning")
@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.01, 100),
    st.floats(0.01, 10),
    st.floats(0.01, 0.5),
    st.sampled_from([0.01, 0.05, 0.1]),
    st.sampled_from([0.5, 0.8, 0.9]),
    st.sampled_from([1.0, 2.0, 0.5]),
)
def test_required_users_matches_statsmodels(
    mean: float, sd: float, mde: float, alpha: float, power: float, ratio: float
) -> None:
    """statsmodels' ratio is nT/nC; here weights are (control, treatment) shares."""
    expected = NormalIndPower().solve_power(
        effect_size=mde * mean / sd, alpha=alpha, power=power, ratio=ratio
    )
    # statsmodels' root finder fails (NaN) for tiny samples; ceil() of a near-integer
    # is not a fair comparison
    assume(math.isfinite(expected) and 2 < expected < 1e9)
    assume(abs(expected - round(expected)) > 1e-6)
    result = required_users(mean, sd * sd, mde, alpha=alpha, power=power, weights=[1.0, ratio])
    assert result.status == "ok"
    assert result.users_by_arm is not None
    assert result.users_by_arm[0] == math.ceil(expected)
    assert result.users_by_arm[1] == pytest.approx(expected * ratio, abs=1.0)


@pytest.mark.parametrize(("n", "alpha", "power"), [(100, 0.05, 0.8), (5000, 0.01, 0.9)])
def test_mde_matches_statsmodels(n: int, alpha: float, power: float) -> None:
    mean, variance = 2.0, 9.0
    d = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power, ratio=1)
    result = minimum_detectable_effect(n, mean, variance, alpha=alpha, power=power)
    assert result.mde_absolute is not None
    # statsmodels' power at our MDE is the target; its own root finder agrees to 1e-4
    achieved = NormalIndPower().power(
        effect_size=result.mde_absolute / 3.0, nobs1=n, alpha=alpha, ratio=1
    )
    assert achieved == pytest.approx(power, abs=1e-9)
    assert result.mde_absolute == pytest.approx(d * 3.0, rel=1e-4)
    assert result.mde_relative == pytest.approx(result.mde_absolute / mean, rel=1e-12)
    # with Student's t instead of the normal, statsmodels needs slightly more users
    t_n = tt_ind_solve_power(effect_size=d, alpha=alpha, power=power, ratio=1)
    assert n < t_n < n * 1.02


def test_conversion_example_by_hand() -> None:
    """p = 10%, +5% relative (0.5 points), α = 0.05, 80% power: the textbook
    n = (1.959964 + 0.841621)² · 2 · 0.09 / 0.005² = 56 511.6 per arm (the second
    tail adds less than one user)."""
    result = required_users(0.1, 0.1 * 0.9, 0.05)
    assert result.users_by_arm == (56_512, 56_512)
    assert result.total_users == 113_024
    three_arms = required_users(0.1, 0.09, 0.05, n_arms=3)
    assert three_arms.users_by_arm == (56_512,) * 3


def test_power_by_simulation() -> None:
    """1500 seeded experiments at the computed sizes detect the lift ~80% of the time
    (within 3 binomial SE), for the fixed-horizon and the sequential test."""
    rng = np.random.default_rng(99)
    mean, sd, mde, reps = 5.0, 4.0, 0.1, 1500
    for sequential in (False, True):
        plan = required_users(mean, sd * sd, mde, sequential=sequential)
        assert plan.users_by_arm is not None
        n = plan.users_by_arm[0]
        hits = 0
        for _ in range(reps):
            # per-arm sufficient statistics of n normal users, drawn directly
            arms = []
            for mu in (mean, mean * (1 + mde)):
                ss = sd * sd * rng.chisquare(n - 1)
                arms.append(MeanStats(n, n * rng.normal(mu, sd / math.sqrt(n)), ss))
            result = compare(arms[0], arms[1], sequential=sequential)
            hits += (result.absolute.p_value or 1) < 0.05
        assert abs(hits / reps - 0.8) < 3 * math.sqrt(0.8 * 0.2 / reps), (sequential, hits)


def test_sequential_needs_more_users_and_a_larger_critical_value() -> None:
    fixed = required_users(0.1, 0.09, 0.05)
    seq = required_users(0.1, 0.09, 0.05, sequential=True, tuning_n=100_000)
    assert (seq.total_users or 0) > (fixed.total_users or 0)
    assert (seq.critical_value or 0) > (fixed.critical_value or 0) == pytest.approx(1.959964)
    mde_fixed = minimum_detectable_effect(10_000, 0.1, 0.09)
    mde_seq = minimum_detectable_effect(10_000, 0.1, 0.09, sequential=True)
    assert (mde_seq.mde_relative or 0) > (mde_fixed.mde_relative or 0)


def test_round_trip() -> None:
    plan = required_users(3.0, 4.0, 0.02, power=0.9)
    assert plan.users_by_arm is not None
    back = minimum_detectable_effect(plan.users_by_arm[0], 3.0, 4.0, power=0.9)
    assert back.mde_relative is not None
    assert back.mde_relative <= 0.02 < back.mde_relative * (1 + 1e-3)


def test_post_hoc_detectable_effect_uses_the_control_arm() -> None:
    rng = np.random.default_rng(5)
    c = MeanStats.from_values(rng.normal(10, 2, 900))
    t = MeanStats.from_values(rng.normal(10, 3, 700))
    result = detectable_effect(c, t)
    # 80% power, α = 0.05: MDE ≈ (1.959964 + 0.841621) · σC · sqrt(1/nC + 1/nT)
    se = math.sqrt(c.variance * (1 / 900 + 1 / 700))
    assert result.mde_absolute == pytest.approx(2.801585 * se, rel=1e-5)
    assert result.mde_relative == pytest.approx((result.mde_absolute or 0) / c.mean)
    assert result.users_by_arm == (900, 700)
    assert result.baseline_variance == pytest.approx(c.variance)


def test_post_hoc_detectable_effect_with_cuped_is_smaller() -> None:
    rng = np.random.default_rng(8)
    x = rng.normal(5, 2, (2, 1000))
    y = x + rng.normal(0, 1, (2, 1000))
    cuped = [CupedStats.from_values(y[i], x[i]) for i in range(2)]
    with_cuped = detectable_effect(*cuped)
    without = detectable_effect(cuped[0].post, cuped[1].post)
    # corr² ≈ 0.8: the MDE shrinks by about sqrt(1 − 0.8) ≈ 0.45
    ratio = (with_cuped.mde_absolute or 0) / (without.mde_absolute or 1)
    assert ratio == pytest.approx(math.sqrt(1 - 0.8), abs=0.03)


@pytest.mark.parametrize(
    ("args", "status"),
    [
        ((0.0, 1.0, 0.05), "zero_baseline"),
        ((1.0, 0.0, 0.05), "zero_variance"),
        ((1.0, -1.0, 0.05), "invalid_input"),
        ((1.0, 1.0, 0.0), "invalid_input"),
        ((math.nan, 1.0, 0.05), "invalid_input"),
    ],
)
def test_degenerate_planning_inputs(args: tuple[float, float, float], status: str) -> None:
    for sequential in (False, True):
        result = required_users(*args, sequential=sequential)
        assert result.status == status and result.message and result.users_by_arm is None
        assert_json_clean(result.to_dict())


def test_degenerate_post_hoc_inputs() -> None:
    empty = detectable_effect(MeanStats.from_values([]), MeanStats.from_values([1.0, 2.0]))
    assert empty.status == "empty_arm" and empty.mde_absolute is None
    zero = detectable_effect(
        MeanStats.from_values([-1, 1] * 50), MeanStats.from_values([0, 2] * 50)
    )
    assert zero.status == "zero_baseline" and zero.mde_relative is None and zero.mde_absolute
    constant = detectable_effect(
        ProportionStats.from_counts(100, 0), ProportionStats.from_counts(100, 5)
    )
    assert constant.status == "zero_variance" and constant.mde_absolute is None
    few = minimum_detectable_effect(1, 1.0, 1.0)
    assert few.status == "invalid_input"
    for result in (empty, zero, constant, few):
        assert_json_clean(result.to_dict())
    with pytest.raises(ValueError):
        required_users(1.0, 1.0, 0.1, power=1.0)
    with pytest.raises(ValueError):
        required_users(1.0, 1.0, 0.1, weights=[1.0])


def test_a_lift_too_small_for_any_traffic_is_unreachable_not_an_error() -> None:
    from abeval.stats import required_users

    for mde in (1e-320, 1e-12):
        result = required_users(0.05, 0.05 * 0.95, mde)
        assert result.status == "unreachable"
        assert result.message == "more than 10¹³ users would be needed"
        assert result.total_users is None


@pytest.mark.parametrize("alpha", [0.001, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("power", [0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_the_noncentrality_is_brents_root(alpha: float, power: float) -> None:
    """λ with Φ(λ − c) + Φ(−λ − c) = power, found without scipy.optimize, is the
    root scipy's Brent method finds (to its tolerance, 1e-13), at fixed-horizon
    critical values and at a confidence sequence's (c of 2 to 5)."""
    from scipy import optimize
    from scipy.stats import norm

    from abeval.stats.power import _noncentrality
    from abeval.stats.sequential import sequential_critical_value

    cs = [float(norm.isf(alpha / 2))]
    cs += [sequential_critical_value(n, alpha, 5000.0) for n in (10, 1e4, 1e9)]
    for c in cs:
        if not power > 2 * norm.sf(c):  # at or below the size: no λ ≥ 0
            continue

        def gap(lam: float, c: float = c) -> float:
            return float(norm.cdf(lam - c) + norm.cdf(-lam - c) - power)

        expected = optimize.brentq(gap, 0.0, c + norm.isf(1 - power) + 1.0, xtol=1e-14)
        found = _noncentrality(c, power)
        assert found == pytest.approx(expected, abs=2e-13), (c, power)
        assert abs(gap(found)) < 1e-14
