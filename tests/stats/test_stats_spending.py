"""Group-sequential boundaries of the O'Brien–Fleming-type α-spending function
(abeval.stats.spending, docs/metrics.md#decision)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from abeval.stats.spending import (
    P_FLOOR,
    information_fractions,
    obf_spending,
    repeated_p_value,
    spending_boundaries,
    spending_critical_value,
)


def test_five_equal_looks_match_the_published_boundaries() -> None:
    # DeMets and Lan (1994), Statistics in Medicine 13, table: the O'Brien-Fleming
    # type spending function, one-sided 0.025 per side, five equally spaced looks
    published = (4.877, 3.357, 2.680, 2.290, 2.031)
    found = spending_boundaries((0.2, 0.4, 0.6, 0.8, 1.0), 0.05)
    assert found == pytest.approx(published, abs=1e-3)


def test_one_look_at_the_end_is_the_fixed_horizon_test() -> None:
    assert spending_critical_value((1.0,), 0.05) == pytest.approx(stats.norm.isf(0.025))


def test_the_spending_function_spends_alpha_by_the_end() -> None:
    assert obf_spending(1.0, 0.05) == pytest.approx(0.05)
    assert obf_spending(0.5, 0.05) == pytest.approx(
        4 * stats.norm.sf(stats.norm.isf(0.0125) / math.sqrt(0.5))
    )
    assert obf_spending(0.0, 0.05) == 0.0


def test_daily_looks_reject_a_true_null_alpha_of_the_time() -> None:
    # an independent check: Brownian motion at 14 equally spaced looks, simulated
    looks = 14
    fractions = tuple((k + 1) / looks for k in range(looks))
    bounds = np.array(spending_boundaries(fractions, 0.05))
    rng = np.random.default_rng(7)
    runs = 400_000
    paths = np.cumsum(rng.normal(0, math.sqrt(1 / looks), (runs, looks)), axis=1)
    z = paths / np.sqrt(np.array(fractions))
    crossed = (np.abs(z) >= bounds).any(axis=1)
    upper = (z >= bounds).any(axis=1)
    se = math.sqrt(0.05 * 0.95 / runs)
    assert crossed.mean() == pytest.approx(0.05, abs=4 * se)
    assert upper.mean() == pytest.approx(0.025, abs=4 * math.sqrt(0.025 * 0.975 / runs))


def test_information_fractions_drop_days_without_new_users_and_cap_at_the_last() -> None:
    assert information_fractions((100, 100, 300), 600) == (1 / 6, 0.5)
    assert information_fractions((100, 400), 200) == (0.25, 1.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.01, 1.0), min_size=1, max_size=20, unique=True),
    st.sampled_from([0.01, 0.025, 0.05, 0.1]),
)
def test_the_repeated_interval_is_never_narrower_than_the_fixed_one(
    points: list[float], alpha: float
) -> None:
    # the law: spending α over several looks never leaves the last look more than α
    fractions = tuple(sorted(points))
    assert spending_critical_value(fractions, alpha) >= stats.norm.isf(alpha / 2) - 1e-6


def test_adjusted_comparisons_over_looks_span_the_last_boundary() -> None:
    from abeval.stats import adjust_comparisons, compare
    from abeval.stats.sufficient import MeanStats

    control = MeanStats.from_sums(5000, 50_000.0, 5000 * (100.0 + 4.0))
    treatment = MeanStats.from_sums(5000, 50_300.0, 5000 * (100.6 + 4.0))
    fixed = compare(control, treatment, relative_interval="delta")
    looks = (0.25, 0.5)
    (found,) = adjust_comparisons([fixed], looks=[looks])
    lift = found.absolute
    assert lift.effect is not None and lift.se is not None and lift.ci_adjusted is not None
    c = spending_critical_value(looks, 0.05)
    assert lift.ci_adjusted == pytest.approx((lift.effect - c * lift.se, lift.effect + c * lift.se))
    # one hypothesis: its p-value is the repeated one, the α whose last boundary
    # |z| reaches (found here by scipy's root finder on the boundaries)
    z = lift.effect / lift.se
    expected = optimize.brentq(lambda a: spending_critical_value(looks, a) - abs(z), 1e-9, 0.999)
    assert lift.p_value == pytest.approx(expected, rel=1e-6)
    assert lift.p_adjusted == pytest.approx(expected, rel=1e-6)
    assert lift.ci == pytest.approx(lift.ci_adjusted)  # the repeated interval at 1 − α


@pytest.mark.parametrize(("t", "z"), [(1.0, 2.0), (0.5, 3.0), (0.3, 1.0), (0.8, -2.7)])
def test_one_look_has_the_closed_form_repeated_p_value(t: float, z: float) -> None:
    # one look at fraction t: c = Φ⁻¹(1 − α(t)/2) with α(t) = 4·(1 − Φ(z_{1−α/4}/√t)),
    # so |z| = c gives z_{1−α/4} = √t·Φ⁻¹(1 − (1 − Φ(|z|))/2)
    q = math.sqrt(t) * stats.norm.isf(stats.norm.sf(abs(z)) / 2)
    assert repeated_p_value(z, (t,)) == pytest.approx(4 * stats.norm.sf(q), rel=1e-8)
    if t == 1.0:  # one look at the end: the fixed-horizon z test's p-value
        assert repeated_p_value(z, (t,)) == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-8)


@pytest.mark.parametrize("z", [1.5, 2.2, 2.9, 3.6, 5.0])
def test_the_repeated_p_value_inverts_the_last_boundary(z: float) -> None:
    looks = tuple((k + 1) / 20 for k in range(14))
    expected = optimize.brentq(lambda a: spending_critical_value(looks, a) - z, 1e-12, 0.999)
    p = repeated_p_value(z, looks)
    assert p == pytest.approx(expected, rel=1e-6)
    assert p > 2 * stats.norm.sf(z)  # looking every day costs: above the fixed-horizon p


def test_the_repeated_p_value_is_below_alpha_exactly_when_the_boundary_is_crossed() -> None:
    looks = (0.1, 0.3, 0.45, 0.7)
    for alpha in (0.01, 0.05, 0.1):
        c = spending_critical_value(looks, alpha)
        for z in np.linspace(c - 0.05, c + 0.05, 21):
            if abs(z - c) > 1e-6:
                assert (repeated_p_value(float(z), looks) < alpha) == (z > c)
    assert repeated_p_value(0.0, looks) == 1.0
    assert repeated_p_value(60.0, looks) == P_FLOOR


@pytest.mark.parametrize("scale", ["absolute", "relative"])
def test_adjusted_p_values_over_looks_agree_with_the_intervals(scale: str) -> None:
    """Over a grid of effects, three hypotheses with their own looks, Holm-adjusted:
    the adjusted p-value is below α exactly when the adjusted interval excludes 0
    (one side: p < α/2 one-sided), for the absolute lift and Fieller's relative one."""
    from abeval.stats import adjust_comparisons, compare
    from abeval.stats.sufficient import MeanStats

    control = MeanStats.from_sums(4000, 40_000.0, 4000 * (100.0 + 4.0))
    schedules = [(0.2, 0.5), (0.3, 0.6, 0.9), (1.0,)]
    for shift in np.linspace(-0.6, 0.6, 25):
        results = []
        for k in range(3):
            mean = 10.0 + float(shift) * (k + 1) / 3
            treatment = MeanStats.from_sums(4000, 4000 * mean, 4000 * (mean**2 + 4.0))
            results.append(compare(control, treatment))
        for r in adjust_comparisons(results, looks=schedules):
            lift = getattr(r, scale)
            assert lift.p_adjusted is not None and lift.interval is not None
            excludes = lift.interval[0] > 0 or lift.interval[1] < 0
            assert (lift.p_adjusted < 0.05) == excludes
            assert (lift.p_value < 0.05) == (lift.ci[0] > 0 or lift.ci[1] < 0)


@pytest.mark.parametrize("target", [0.05, 0.01, 0.001, 1e-6])
def test_a_boundary_search_stops_at_the_root(
    target: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # P(|S_k| ≥ b) over a continuation region's sub-density (a grid on [-2, 2] with
    # Simpson's weights of the standard normal density, a step of sd 1) = target:
    # the root as scipy's brentq finds it, reached in a few Newton steps (each reads
    # Φ twice), not by bisecting on to a 1e-12 bracket once Newton has converged
    import scipy.special

    from abeval.stats.spending import _simpson, _solve

    grid = np.linspace(-2.0, 2.0, 241)
    weights = _simpson(grid) * stats.norm.pdf(grid)
    calls: list[int] = []
    ndtr = scipy.special.ndtr
    monkeypatch.setattr(scipy.special, "ndtr", lambda x: calls.append(1) or ndtr(x))
    found = _solve(grid, weights, 1.0, target, 2.0)
    steps = len(calls) // 2
    monkeypatch.undo()

    def crossing(b: float) -> float:
        return float(np.sum(weights * (stats.norm.cdf(-b - grid) + stats.norm.sf(b - grid))))

    root = optimize.brentq(lambda b: crossing(b) - target, 0.0, 20.0, xtol=1e-14)
    assert found == pytest.approx(root, rel=1e-12)
    assert steps <= 20
