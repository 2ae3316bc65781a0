"""Confidence sequences: ρ by hand, the half-width and p-value against a direct
numerical evaluation of the normal-mixture martingale, gbstats' own unit-test
numbers, and a peeking simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy import stats as sps

from abeval.stats import (
    MeanStats,
    compare,
    sequential_critical_value,
    sequential_halfwidth,
    sequential_p_value,
    sequential_rho,
)


def log_mixture(s: float, t: float, rho: float) -> float:
    """ln M_t, M_t = ∫ exp(λS − λ²t/2) dN(λ; 0, ρ²): the normal-mixture martingale of
    a sum S of t standardised observations (Robbins 1970; Howard et al. 2021), by
    quadrature around the integrand's mode (in logs, to stay in range)."""

    def log_integrand(lam: float) -> float:
        return lam * s - lam * lam * t / 2 + float(sps.norm.logpdf(lam, scale=rho))

    peak = s / (t + 1 / rho**2)
    width = 1 / math.sqrt(t + 1 / rho**2)
    top = log_integrand(peak)
    area = integrate.quad(
        lambda lam: math.exp(log_integrand(lam) - top), peak - 40 * width, peak + 40 * width
    )[0]
    return top + math.log(area)


def boundary(t: float, rho: float, alpha: float) -> float:
    """The S at which M_t reaches 1/α (Ville's inequality: crossed with prob. ≤ α)."""
    target = math.log(1 / alpha)
    return float(
        optimize.brentq(
            lambda s: log_mixture(s, t, rho) - target, 0.0, 50 * math.sqrt(t), xtol=1e-12
        )
    )


def test_rho_by_hand() -> None:
    # α = 0.05: −2 ln α = 5.991465, ln(1 + 5.991465) = 1.944691; sum 7.936156;
    # N = 5000: ρ = sqrt(7.936156 / 5000) = sqrt(0.00158723) = 0.0398401
    assert sequential_rho(0.05, 5000) == pytest.approx(0.0398401, abs=5e-8)
    # α = 0.01, N = 1000: 9.210340 + ln(10.210340) = 9.210340 + 2.323401 = 11.533741
    assert sequential_rho(0.01, 1000) == pytest.approx(math.sqrt(0.011533741), abs=1e-8)


@pytest.mark.parametrize(
    ("n", "alpha", "tuning"), [(500, 0.05, 5000), (20_000, 0.05, 5000), (3000, 0.1, 1000)]
)
def test_halfwidth_and_p_value_from_the_mixture_martingale(
    n: int, alpha: float, tuning: float
) -> None:
    rho = sequential_rho(alpha, tuning)
    se = 0.37
    sigma = se * math.sqrt(n)  # per-observation sd of the estimate's n-sample mean
    expected = sigma * boundary(n, rho, alpha) / n
    assert sequential_halfwidth(se, n, alpha, tuning) == pytest.approx(expected, rel=1e-7)
    for z in (0.5, 2.5, 4.0):
        by_quadrature = min(1.0, math.exp(-log_mixture(z * math.sqrt(n), n, rho)))
        assert sequential_p_value(z, n, alpha, tuning) == pytest.approx(by_quadrature, rel=1e-7)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
@pytest.mark.parametrize("tuning", [1000, 5000, 100_000])
def test_rho_makes_the_bound_nearly_tightest_at_the_tuning_size(
    alpha: float, tuning: float
) -> None:
    def width(rho: float) -> float:
        return sequential_critical_value(tuning, alpha, rho=rho)

    best = optimize.minimize_scalar(
        lambda log_rho: width(math.exp(log_rho)), bounds=(-15, 5), method="bounded"
    )
    assert width(sequential_rho(alpha, tuning)) == pytest.approx(best.fun, rel=1e-3)
    # and the exact optimum solves u − ln u = 1 − 2 ln α for u = Nρ² + 1
    u = math.exp(best.x) ** 2 * tuning + 1
    assert u - math.log(u) == pytest.approx(1 - 2 * math.log(alpha), rel=1e-4)


def test_gbstats_sequential_unit_test() -> None:
    """gbstats' own test (packages/stats/tests/frequentist/test_tests.py,
    TestSequentialTTest.test_sequential_test_runs): relative lift, N = 1000."""
    control = MeanStats.from_sums(3000, 1396.87, 52377.9767)
    treatment = MeanStats.from_sums(3461, 2422.7, 134698.29)
    result = compare(control, treatment, sequential=True, tuning_n=1000, relative_interval="delta")
    assert result.method == "sequential" and result.tuning_n == 1000
    lift = result.relative
    assert lift.effect == pytest.approx(0.50336, abs=5e-6)
    assert lift.se == pytest.approx(0.33341, abs=5e-6)
    assert lift.ci == pytest.approx((-0.55844, 1.56516), abs=5e-6)
    assert lift.p_value == 1.0
    assert lift.dof is None


def test_sequence_is_wider_than_the_fixed_interval_and_consistent_with_p() -> None:
    rng = np.random.default_rng(0)
    c = MeanStats.from_values(rng.normal(10, 2, 4000))
    t = MeanStats.from_values(rng.normal(10.2, 2, 4000))
    fixed, seq = compare(c, t), compare(c, t, sequential=True)
    assert fixed.absolute.ci is not None and seq.absolute.ci is not None
    assert seq.absolute.ci[0] < fixed.absolute.ci[0] and seq.absolute.ci[1] > fixed.absolute.ci[1]
    assert (seq.absolute.p_value or 0) > (fixed.absolute.p_value or 1)
    for z in np.linspace(0, 6, 61):
        n, se = 8000, 1.0
        excludes = z * se > sequential_halfwidth(se, n)
        assert excludes == (sequential_p_value(float(z), n) < 0.05)


def test_continuous_monitoring_keeps_the_error_rate() -> None:
    """500 seeded A/A experiments looked at 20 times (every 150 users per arm):
    stopping at the first fixed-horizon p < 0.05 rejects far more than 5%, the
    confidence sequence stays at or below 5% (within 3 binomial SE)."""
    rng = np.random.default_rng(2024)
    reps, looks, step = 500, 20, 150
    y = rng.exponential(1.0, (reps, 2, looks * step))  # skewed, like revenue
    sums = y.reshape(reps, 2, looks, step).sum(axis=3).cumsum(axis=2)
    squares = (y * y).reshape(reps, 2, looks, step).sum(axis=3).cumsum(axis=2)
    n = step * np.arange(1, looks + 1)
    mean = sums / n
    var = (squares - sums * mean) / (n - 1)
    diff = mean[:, 1] - mean[:, 0]
    se = np.sqrt((var[:, 0] + var[:, 1]) / n)
    naive = (np.abs(diff / se) > sps.norm.isf(0.025)).any(axis=1).mean()
    crit = np.array([sequential_critical_value(2 * float(k), 0.05, 5000) for k in n])
    sequential = (np.abs(diff / se) > crit).any(axis=1).mean()
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    assert naive > 0.15
    assert sequential <= bound


def test_bad_parameters_raise() -> None:
    with pytest.raises(ValueError):
        sequential_rho(0.0, 100)
    with pytest.raises(ValueError):
        sequential_rho(0.05, 0)
    with pytest.raises(ValueError):
        sequential_critical_value(0, 0.05)
    with pytest.raises(ValueError):
        compare(
            MeanStats.from_values([1, 2]),
            MeanStats.from_values([1, 3]),
            sequential=True,
            tuning_n=-1,
        )
