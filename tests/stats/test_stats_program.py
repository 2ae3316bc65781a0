"""The statistics of a program of experiments (abeval.stats.program), against
definitions and independent implementations: the REML score equation solved by
its fixed point (Viechtbauer 2005), the closed form with equal standard errors,
numerical integration of the mixture's likelihood and posterior, a Gaussian
joint posterior by linear algebra, and statsmodels' Wilson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from statsmodels.stats.proportion import proportion_confint

from abeval.stats.program import (
    MIN_EXPERIMENTS,
    Prior,
    fit_prior,
    impact,
    mixture_loglik,
    posterior_arrays,
    reml_normal,
    shrink,
    win_rate,
)


def _program(k: int, seed: int, nulls: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    se = rng.lognormal(math.log(0.015), 0.35, k)
    theta = np.where(rng.random(k) < nulls, 0.0, rng.normal(0.004, 0.012, k))
    return theta + rng.normal(0, se), se


def _reml_fixed_point(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """τ² from the REML score equation's fixed point, τ² = Σw²((y−μ)² − s²)/Σw² + 1/Σw."""
    t2 = float(np.var(y))
    for _ in range(5000):
        w = 1 / (s**2 + t2)
        mu = float(np.sum(w * y) / np.sum(w))
        new = max(0.0, float(np.sum(w**2 * ((y - mu) ** 2 - s**2)) / np.sum(w**2) + 1 / np.sum(w)))
        if abs(new - t2) < 1e-16:
            break
        t2 = new
    return mu, math.sqrt(t2)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reml_solves_the_score_equation(seed: int) -> None:
    y, s = _program(40, seed)
    mean, tau, mean_se = reml_normal(y, s)
    want_mean, want_tau = _reml_fixed_point(y, s)
    assert tau == pytest.approx(want_tau, rel=1e-6)
    assert mean == pytest.approx(want_mean, rel=1e-6, abs=1e-9)
    assert mean_se == pytest.approx(1 / math.sqrt(np.sum(1 / (s**2 + want_tau**2))), rel=1e-6)


def test_reml_with_equal_standard_errors_is_the_sample_variance_less_the_noise() -> None:
    rng = np.random.default_rng(7)
    y = rng.normal(0.01, 0.02, 30)
    s = np.full(30, 0.01)
    _, tau, _ = reml_normal(y, s)
    assert tau**2 == pytest.approx(np.var(y, ddof=1) - 0.01**2, rel=1e-6)
    y_tight = rng.normal(0.01, 0.002, 30)  # spread below the noise: τ = 0
    assert reml_normal(y_tight, s)[1] == pytest.approx(0.0, abs=1e-6)


def test_mixture_likelihood_is_the_integral_over_the_prior() -> None:
    y, s = _program(6, 4)
    share, mean, sd = 0.6, 0.01, 0.015
    want = 0.0
    for yi, si in zip(y, s, strict=True):
        slab = integrate.quad(
            lambda t, yi=yi, si=si: stats.norm.pdf(yi, t, si) * stats.norm.pdf(t, mean, sd),
            -0.5,
            0.5,
            points=[yi, mean],
        )[0]
        want += math.log(share * stats.norm.pdf(yi, 0, si) + (1 - share) * slab)
    assert mixture_loglik(share, mean, sd, y, s) == pytest.approx(want, rel=1e-8)


def test_mixture_posterior_is_the_integral_over_the_prior() -> None:
    prior = Prior(kind="mixture", experiments=30, null_share=0.7, effect_mean=0.01,
                  effect_sd=0.015, mean=0.003, sd=0.01)  # fmt: skip
    y, s = np.array([0.002, 0.03, -0.02]), np.array([0.01, 0.012, 0.015])
    mean, sd, low, high, p0 = posterior_arrays(prior, y, s)
    assert p0 is not None
    for i in range(3):
        like0 = 0.7 * stats.norm.pdf(y[i], 0, s[i])

        def slab(t: float, power: int, i: int = i) -> float:
            return t**power * stats.norm.pdf(y[i], t, s[i]) * 0.3 * stats.norm.pdf(t, 0.01, 0.015)

        mass = integrate.quad(slab, -0.3, 0.3, args=(0,), points=[y[i]])[0]
        first = integrate.quad(slab, -0.3, 0.3, args=(1,), points=[y[i]])[0]
        second = integrate.quad(slab, -0.3, 0.3, args=(2,), points=[y[i]])[0]
        total = like0 + mass
        assert p0[i] == pytest.approx(like0 / total, rel=1e-7)
        assert mean[i] == pytest.approx(first / total, rel=1e-6)
        assert sd[i] ** 2 == pytest.approx(second / total - (first / total) ** 2, rel=1e-6)

        def cdf(x: float, i: int = i, at0: float = like0, whole: float = total) -> float:
            below = integrate.quad(slab, -0.3, x, args=(0,), points=[min(y[i], x - 1e-9)])[0]
            return (below + at0 * (x >= 0)) / whole

        assert cdf(low[i]) == pytest.approx(0.025, abs=1e-6) or low[i] == 0.0
        assert cdf(high[i]) == pytest.approx(0.975, abs=1e-6) or high[i] == 0.0


def test_normal_posteriors_and_their_sum_are_the_joint_gaussian_posterior() -> None:
    """With τ known and a flat prior on the mean, θ | y is Gaussian: its covariance
    by linear algebra gives each sd and the variance of the shipped ones' sum."""
    y, s = _program(25, 11)
    mean, tau, mean_se = reml_normal(y, s)
    prior = Prior(kind="normal", experiments=25, mean=mean, sd=tau, mean_se=mean_se)  # τ known
    # Unknowns (μ, θ_1..θ_k): prior precision of θ − μ·1 is I/τ², data precision diag(1/s²).
    k = len(y)
    a = np.zeros((k + 1, k + 1))
    a[1:, 1:] = np.diag(1 / s**2) + np.eye(k) / tau**2
    a[0, 0] = k / tau**2
    a[0, 1:] = a[1:, 0] = -1 / tau**2
    b = np.concatenate([[0.0], y / s**2])
    cov = np.linalg.inv(a)
    post = cov @ b
    got_mean, got_sd, *_ = posterior_arrays(prior, y, s)
    np.testing.assert_allclose(got_mean, post[1:], rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(got_sd, np.sqrt(np.diag(cov)[1:]), rtol=1e-6)
    ship = y / s > 1.0
    summed = impact(prior, y, s, ship)
    pick = np.concatenate([[False], ship])
    sum_sd = math.sqrt(cov[np.ix_(pick, pick)].sum())
    assert summed.debiased == pytest.approx(post[pick].sum(), rel=1e-6)
    assert summed.raw == pytest.approx(y[ship].sum())
    assert summed.high - summed.low == pytest.approx(2 * 1.959963984540054 * sum_sd, rel=1e-6)


def test_fitted_normal_posterior_averages_over_tau_by_its_restricted_likelihood() -> None:
    """The posterior mean and the 97.5% point, by quadrature over τ (flat priors on
    the mean and τ): given τ, θ_i | y is normal (the BLUP and its variance)."""
    y, s = _program(25, 12)
    prior = fit_prior(y, s)
    assert prior.kind == "normal"
    upper = 3 * np.std(y) + np.max(s)

    def restricted(tau: float) -> float:  # the definition: ∫ Π N(y_i; μ, s_i² + τ²) dμ
        v = s**2 + tau**2
        w = 1 / v
        mu = np.sum(w * y) / np.sum(w)
        log = -0.5 * (np.sum(np.log(v)) + np.log(np.sum(w)) + np.sum(w * (y - mu) ** 2))
        return float(np.exp(log + 60))

    def given(tau: float, i: int) -> tuple[float, float]:
        w = 1 / (s**2 + tau**2)
        mu = np.sum(w * y) / np.sum(w)
        b = s[i] ** 2 / (s[i] ** 2 + tau**2)
        return float(mu + (1 - b) * (y[i] - mu)), float((1 - b) * s[i] ** 2 + b * b / np.sum(w))

    norm = integrate.quad(restricted, 0, upper, limit=200)[0]
    got_mean, _, _, got_high, _ = posterior_arrays(prior, y, s)
    for i in (0, 7):
        want = integrate.quad(lambda t, i=i: restricted(t) * given(t, i)[0], 0, upper, limit=200)[0]
        assert got_mean[i] == pytest.approx(want / norm, rel=1e-3)

        def above(t: float, i: int = i) -> float:
            m, v = given(t, i)
            return restricted(t) * stats.norm.sf(got_high[i], m, math.sqrt(v))

        assert integrate.quad(above, 0, upper, limit=200)[0] / norm == pytest.approx(
            0.025, abs=5e-4
        )


@pytest.mark.parametrize(("wins", "decided"), [(0, 7), (4, 21), (7, 7), (13, 40)])
def test_win_rate_interval_is_wilson(wins: int, decided: int) -> None:
    got = win_rate(wins, decided)
    low, high = proportion_confint(wins, decided, alpha=0.05, method="wilson")
    assert got.value == wins / decided
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


def test_degenerate_cases_are_statuses() -> None:
    assert win_rate(0, 0).status == "none_decided"
    assert win_rate(0, 0).value is None
    y, s = _program(5, 1)
    prior = fit_prior(y, s)
    assert (prior.kind, prior.status) == ("none", "too_few")
    assert prior.message is not None and f"at least {MIN_EXPERIMENTS} experiments" in prior.message
    raw = shrink(prior, y, s)
    assert [r.mean for r in raw] == list(y)
    assert raw[0].low == pytest.approx(y[0] - 1.959963984540054 * s[0])
    summed = impact(prior, y, s, [True] * 5)
    assert summed.debiased is None and summed.status == "too_few"
    assert impact(prior, y, s, [False] * 5).status == "none_shipped"


def test_many_nulls_choose_the_mixture_and_a_normal_program_the_normal() -> None:
    y, s = _program(200, 3, nulls=0.8)
    y = np.where(np.arange(200) % 5 == 0, y + 0.04, y)
    chosen = fit_prior(y, s)
    assert chosen.kind == "mixture"
    assert chosen.aic_mixture is not None and chosen.aic_normal is not None
    assert chosen.aic_mixture < chosen.aic_normal - 2
    # normal programs: the mixture is a false alarm now and then (bench_program.py)
    kinds = [fit_prior(*_program(200, seed)).kind for seed in range(10)]
    assert kinds.count("mixture") <= 3


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-0.1, 0.1), st.floats(0.002, 0.05)), min_size=20, max_size=40))
def test_shrunken_lifts_lie_between_the_raw_lift_and_the_prior_mean(
    rows: list[tuple[float, float]],
) -> None:
    y, s = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    mean, tau, mean_se = reml_normal(y, s)
    prior = Prior(kind="normal", experiments=len(y), mean=mean, sd=tau, mean_se=mean_se)
    for yi, got in zip(y, shrink(prior, y, s), strict=True):
        assert min(yi, mean) - 1e-12 <= got.mean <= max(yi, mean) + 1e-12


def test_no_spread_shrinks_every_lift_to_the_pooled_mean() -> None:
    y, s = _program(30, 9)
    prior = Prior(kind="normal", experiments=30, mean=0.004, sd=0.0, mean_se=0.001)
    got = shrink(prior, y, s)
    assert {r.mean for r in got} == {0.004}
    assert [r.sd for r in got] == pytest.approx([0.001] * 30, rel=1e-12)
