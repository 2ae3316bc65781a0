"""CUPED: θ is the pooled least-squares slope, the adjusted test is Welch's test on
the adjusted per-user values, ratio CUPED reduces to mean CUPED, and the fallback."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from abeval.stats import (
    CupedStats,
    MeanStats,
    RatioCupedStats,
    RatioStats,
    compare,
    compare_bayesian,
    cuped_theta,
)


def _arms(seed: int = 0, n: int = 800, lift: float = 0.3) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x_c, x_t = rng.gamma(2.0, 2.0, n), rng.gamma(2.0, 2.0, n + 37)
    y_c = 1.0 + 0.8 * x_c + rng.normal(0, 1.5, x_c.size)
    y_t = 1.0 + lift + 0.8 * x_t + rng.normal(0, 1.5, x_t.size)
    return y_c, x_c, y_t, x_t


def test_theta_is_the_pooled_least_squares_slope() -> None:
    y_c, x_c, y_t, x_t = _arms()
    slope = np.polyfit(np.concatenate([x_c, x_t]), np.concatenate([y_c, y_t]), 1)[0]
    theta = cuped_theta(CupedStats.from_values(y_c, x_c), CupedStats.from_values(y_t, x_t))
    assert theta == pytest.approx(slope, rel=1e-10)


def test_adjusted_test_is_welch_on_adjusted_values() -> None:
    y_c, x_c, y_t, x_t = _arms(1)
    result = compare(CupedStats.from_values(y_c, x_c), CupedStats.from_values(y_t, x_t))
    assert result.cuped and result.status == "ok" and result.theta is not None
    adj_c, adj_t = y_c - result.theta * x_c, y_t - result.theta * x_t
    welch = sps.ttest_ind(adj_t, adj_c, equal_var=False)
    assert result.absolute.effect == pytest.approx(adj_t.mean() - adj_c.mean(), rel=1e-10)
    assert result.absolute.p_value == pytest.approx(welch.pvalue, rel=1e-8)
    assert result.absolute.dof == pytest.approx(welch.df, rel=1e-10)
    # relative: adjusted difference over the *unadjusted* control mean
    assert result.relative.effect == pytest.approx(
        (adj_t.mean() - adj_c.mean()) / y_c.mean(), rel=1e-10
    )
    # variance reduction: 1 − adjusted over unadjusted variance of the difference
    unadjusted = y_t.var(ddof=1) / y_t.size + y_c.var(ddof=1) / y_c.size
    adjusted = adj_t.var(ddof=1) / adj_t.size + adj_c.var(ddof=1) / adj_c.size
    assert result.variance_reduction == pytest.approx(1 - adjusted / unadjusted, rel=1e-9)
    # with corr(y, x) ≈ 0.83 here, about 1 − 0.83² of the variance is left
    r = np.corrcoef(np.concatenate([y_c, y_t]), np.concatenate([x_c, x_t]))[0, 1]
    assert result.variance_reduction == pytest.approx(r * r, abs=0.03)


def test_zero_variance_covariate_falls_back_to_the_unadjusted_test() -> None:
    y_c, _, y_t, _ = _arms(2)
    cuped = compare(
        CupedStats.from_values(y_c, np.zeros_like(y_c)),
        CupedStats.from_values(y_t, np.zeros_like(y_t)),
    )
    plain = compare(MeanStats.from_values(y_c), MeanStats.from_values(y_t))
    assert cuped.status == "ok" and not cuped.cuped and cuped.theta is None
    assert "CUPED not applied" in cuped.message
    assert cuped.absolute == plain.absolute and cuped.relative == plain.relative
    assert compare_bayesian(
        CupedStats.from_values(y_c, np.ones_like(y_c)),
        CupedStats.from_values(y_t, np.ones_like(y_t)),
    ).message.startswith("CUPED not applied")


def test_ratio_cuped_with_unit_denominators_is_mean_cuped() -> None:
    y_c, x_c, y_t, x_t = _arms(3)
    ones_c, ones_t = np.ones_like(y_c), np.ones_like(y_t)
    ratio = compare(
        RatioCupedStats.from_values(y_c, ones_c, x_c, ones_c),
        RatioCupedStats.from_values(y_t, ones_t, x_t, ones_t),
    )
    mean = compare(CupedStats.from_values(y_c, x_c), CupedStats.from_values(y_t, x_t))
    assert ratio.theta == pytest.approx(mean.theta, rel=1e-10)
    for a, b in ((ratio.absolute, mean.absolute), (ratio.relative, mean.relative)):
        assert a.effect == pytest.approx(b.effect, rel=1e-10)
        assert a.se == pytest.approx(b.se, rel=1e-10)
        assert a.p_value == pytest.approx(b.p_value, rel=1e-8)


def _ctr_arm(rng: np.random.Generator, n: int, boost: float) -> tuple[np.ndarray, ...]:
    propensity = rng.beta(1.0, 9.0, n)
    pre_d = rng.poisson(8, n) + 1
    post_d = rng.poisson(8, n) + 1
    pre_m = rng.binomial(pre_d, propensity)
    post_m = rng.binomial(post_d, np.minimum(propensity * boost, 1.0))
    return tuple(a.astype(float) for a in (post_m, post_d, pre_m, pre_d))


def test_ratio_cuped_is_welch_on_adjusted_linearised_values() -> None:
    rng = np.random.default_rng(4)
    c, t = _ctr_arm(rng, 1500, 1.0), _ctr_arm(rng, 1400, 1.1)
    result = compare(RatioCupedStats.from_values(*c), RatioCupedStats.from_values(*t))
    assert result.cuped and result.theta is not None and result.status == "ok"
    theta = result.theta

    def adjusted(m: np.ndarray, d: np.ndarray, pm: np.ndarray, pd: np.ndarray) -> np.ndarray:
        r, r_pre = m.sum() / d.sum(), pm.sum() / pd.sum()
        lin = (m - r * d) / d.mean()
        lin_pre = (pm - r_pre * pd) / pd.mean()
        return lin - theta * lin_pre + (r - theta * r_pre)

    adj_c, adj_t = adjusted(*c), adjusted(*t)
    welch = sps.ttest_ind(adj_t, adj_c, equal_var=False)
    assert result.absolute.effect == pytest.approx(adj_t.mean() - adj_c.mean(), rel=1e-9)
    assert result.absolute.p_value == pytest.approx(welch.pvalue, rel=1e-7)
    assert (result.variance_reduction or 0) > 0.05  # the pre-period CTR predicts the post one
    plain = compare(RatioStats.from_values(*c[:2]), RatioStats.from_values(*t[:2]))
    assert (result.absolute.se or 0) < (plain.absolute.se or 0)


def test_ratio_cuped_without_pre_period_denominator_falls_back() -> None:
    rng = np.random.default_rng(5)
    c, t = _ctr_arm(rng, 100, 1.0), _ctr_arm(rng, 100, 1.0)
    zero = np.zeros(100)
    result = compare(
        RatioCupedStats.from_values(c[0], c[1], zero, zero),
        RatioCupedStats.from_values(*t),
    )
    assert result.status == "ok" and not result.cuped and "CUPED not applied" in result.message
    plain = compare(RatioStats.from_values(*c[:2]), RatioStats.from_values(*t[:2]))
    assert result.absolute == plain.absolute


def test_cuped_intervals_cover_and_are_narrower() -> None:
    """400 seeded experiments with a known lift of 0.3: the CUPED interval covers it
    at 95% (within 3 binomial SE) and is narrower by about sqrt(1 − corr²)."""
    rng = np.random.default_rng(6)
    reps, n, lift = 400, 300, 0.3
    x = rng.gamma(2.0, 2.0, (reps, 2, n))
    y = 1.0 + 0.8 * x + rng.normal(0, 1.5, (reps, 2, n))
    y[:, 1] += lift
    covered, width_ratio = 0, []
    for k in range(reps):
        c, t = CupedStats.from_values(y[k, 0], x[k, 0]), CupedStats.from_values(y[k, 1], x[k, 1])
        ci = compare(c, t).absolute.ci
        plain = compare(c.post, t.post).absolute.ci
        assert ci is not None and plain is not None
        covered += ci[0] <= lift <= ci[1]
        width_ratio.append((ci[1] - ci[0]) / (plain[1] - plain[0]))
    se = math.sqrt(0.95 * 0.05 / reps)
    assert abs(covered / reps - 0.95) < 3 * se
    # corr² = 0.64·8 / (0.64·8 + 2.25) ≈ 0.695: the interval keeps sqrt(0.305) ≈ 0.55
    assert float(np.mean(width_ratio)) == pytest.approx(math.sqrt(1 - 5.12 / 7.37), abs=0.02)
