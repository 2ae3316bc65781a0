"""The forecast model (abeval.stats.forecast, docs/metrics.md#forecasting-the-online-lift)
against independent re-derivations: regression calibration by hand, statsmodels
WLS at a fixed τ² (with each experiment's calibration error β̃²λσ² in its
variance), the restricted likelihood from its matrix formula and its
maximiser by scipy, the HKSJ standard error by formula, the predictive
mixture by root-finding the Q-profile confidence distribution of τ with
scipy, the small-k REML interval with scipy's t, the intercept-only fallback
and the leave-one-out influence diagnostic."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import optimize
from scipy import stats as st

from abeval.stats import forecast_batch as fb
from abeval.stats.forecast import (
    SMALL_K,
    HistoryRow,
    fit,
    log_score,
    observed_interval,
    predict,
    prob_above,
)
from abeval.stats.forecast_influence import influence


def _history(k: int = 10, seed: int = 4, tau: float = 0.01, sigma: float = 0.004):
    rng = np.random.default_rng(seed)
    xi = rng.normal(0.01, 0.02, k)
    s = rng.uniform(0.006, 0.014, k)
    x = xi + rng.normal(0, sigma, k)
    y = 0.002 + 0.8 * xi + rng.normal(0, tau, k) + rng.normal(0, 1, k) * s
    return [
        HistoryRow(float(a), sigma, float(b), float(c), f"e{i}")
        for i, (a, b, c) in enumerate(zip(x, y, s, strict=True))
    ]


def _arrays(rows):
    x = np.array([r.offline_lift for r in rows])
    sx = np.array([r.offline_se for r in rows])
    y = np.array([r.online_lift for r in rows])
    s = np.array([r.online_se for r in rows])
    return x, sx, y, s


def _calibrated(x, sx):
    """Regression calibration written out: S² = var(x) − mean(σ²), λ = S²/(S² + σ²)."""
    s2 = np.var(x, ddof=1) - np.mean(sx**2)
    lam = s2 / (s2 + sx**2)
    return x.mean() + lam * (x - x.mean()), s2


def _reml(tau2, xhat, y, s):
    """The restricted log-likelihood from its matrix formula (up to a constant)."""
    design = np.column_stack([np.ones_like(xhat), xhat])
    v = np.diag(s**2 + tau2)
    vinv = np.linalg.inv(v)
    info = design.T @ vinv @ design
    beta = np.linalg.solve(info, design.T @ vinv @ y)
    r = y - design @ beta
    return -0.5 * (np.linalg.slogdet(v)[1] + np.linalg.slogdet(info)[1] + r @ vinv @ r)


def _extra(rows):
    """Each experiment's calibration error β̃² λᵢ σᵢ², β̃ the slope of a first
    pass: statsmodels WLS with weights 1 / (s² + τ̃²), τ̃ the grid's τ of largest
    restricted likelihood (the matrix formula below)."""
    x, sx, y, s = _arrays(rows)
    xhat, s2 = _calibrated(x, sx)
    grid = fb.tau_grid(y[None], s[None])[0]
    tau = grid[int(np.argmax([_reml(t**2, xhat, y, s) for t in grid]))]
    beta = sm.WLS(y, sm.add_constant(xhat), weights=1 / (s**2 + tau**2)).fit().params[1]
    return beta**2 * s2 / (s2 + sx**2) * sx**2


def test_regression_calibration_by_hand():
    rows = _history()
    x, sx, _, _ = _arrays(rows)
    cal = fb.calibrate(x[None], sx[None])
    xhat, s2 = _calibrated(x, sx)
    assert cal.s2[0] == pytest.approx(s2, rel=1e-12)
    np.testing.assert_allclose(cal.xhat[0], xhat, rtol=1e-12)
    # a new lift with σ₀ = 0 is not shrunk; with σ₀ = S it moves half-way to x̄
    x0, resid = fb.shrink(cal, np.array([0.05, 0.05]), np.array([0.0, math.sqrt(s2)]))
    assert x0[0] == pytest.approx(0.05)
    assert x0[1] == pytest.approx(x.mean() + 0.5 * (0.05 - x.mean()))
    assert resid[1] == pytest.approx(s2 / 2)


def test_wls_at_fixed_tau_matches_statsmodels():
    rows = _history()
    x, sx, y, s = _arrays(rows)
    xhat, _ = _calibrated(x, sx)
    for tau in (0.0, 0.007, 0.03):
        grid = fb.wls_on_grid(xhat[None], y[None], s[None], np.array([[tau]]))
        res = sm.WLS(y, sm.add_constant(xhat), weights=1 / (s**2 + tau**2)).fit()
        assert grid.alpha[0, 0] == pytest.approx(res.params[0], rel=1e-9)
        assert grid.beta[0, 0] == pytest.approx(res.params[1], rel=1e-9)
        cov = res.normalized_cov_params
        assert grid.c00[0, 0] == pytest.approx(cov[0, 0], rel=1e-9)
        assert grid.c01[0, 0] == pytest.approx(cov[0, 1], rel=1e-9)
        assert grid.c11[0, 0] == pytest.approx(cov[1, 1], rel=1e-9)
        assert grid.q[0, 0] == pytest.approx(res.ssr, rel=1e-9)


def test_reml_likelihood_and_maximiser():
    rows = _history(k=14, tau=0.015)
    x, sx, y, s = _arrays(rows)
    xhat, _ = _calibrated(x, sx)
    taus = np.array([[0.0, 0.004, 0.012, 0.05]])
    grid = fb.wls_on_grid(xhat[None], y[None], s[None], taus)
    hand = [_reml(t**2, xhat, y, s) for t in taus[0]]
    # same function up to one additive constant
    np.testing.assert_allclose(grid.loglik[0] - grid.loglik[0, 0], np.array(hand) - hand[0])
    best = optimize.minimize_scalar(
        lambda t: -_reml(t**2, xhat, y, s), bounds=(0, 0.1), method="bounded"
    ).x
    f = fit(rows)
    assert best > 0.003  # an interior maximum, so the grid's argmax is meaningful
    step = (fb.GRID_TOP / fb.GRID_BOTTOM) ** (1 / (fb.GRID_POINTS - 2))
    assert best / step <= f.tau <= best * step


def test_slope_interval_is_hksj_with_t_k_minus_2():
    rows = _history(k=9)
    x, sx, y, s = _arrays(rows)
    xhat, _ = _calibrated(x, sx)
    f = fit(rows, alpha=0.1)
    assert f.status == "ok" and f.tau is not None and f.slope_interval is not None
    w = 1 / (s**2 + f.tau**2 + _extra(rows))
    res = sm.WLS(y, sm.add_constant(xhat), weights=w).fit()
    q = np.sum(w * res.resid**2) / (9 - 2)
    se = math.sqrt(q * res.normalized_cov_params[1, 1])
    assert f.slope == pytest.approx(res.params[1], rel=1e-9)
    assert f.slope_se == pytest.approx(se, rel=1e-9)
    half = st.t.ppf(0.95, 7) * se
    assert f.slope_interval == pytest.approx((res.params[1] - half, res.params[1] + half))


def _q_profile_taus(xhat, y, s, df, probs, top, extra=0.0):
    """τ at each confidence level of ``probs``: the root of Q(τ) = χ²_df
    quantile (statsmodels WLS for Q, scipy brentq), 0 where Q(0) is already
    below it, ``top`` where Q(top) is still above it (Viechtbauer 2007)."""

    def q(tau):
        v = s**2 + tau**2 + extra
        res = sm.WLS(y, sm.add_constant(xhat), weights=1 / v).fit()
        return float(np.sum(res.resid**2 / v))

    taus = []
    for p in probs:
        level = st.chi2.isf(p, df)  # H(τ) = P(χ² > Q(τ)) = p
        if q(0.0) <= level:
            taus.append(0.0)
        elif q(top) >= level:
            taus.append(top)
        else:
            taus.append(optimize.brentq(lambda t, lv=level: q(t) - lv, 0.0, top, xtol=1e-9))
    return np.array(taus)


@pytest.mark.slow
def test_predictive_matches_q_profile_sampling():
    """P(θ₀ > c), the mean and the interval against the confidence-distribution
    predictive written as Nagashima, Noma and Furukawa (2019) compute it: τ at
    evenly spaced confidence levels by root-finding, then the conditional
    normal at each, averaged."""
    rows = _history(k=10)
    x, sx, y, s = _arrays(rows)
    xhat, s2 = _calibrated(x, sx)
    x0, sigma0 = 0.031, 0.008
    lam0 = s2 / (s2 + sigma0**2)
    h = np.array([1.0, x.mean() + lam0 * (x0 - x.mean())])
    top = 30 * max(np.std(y, ddof=1), np.median(s))
    probs = (np.arange(4000) + 0.5) / 4000
    means, sds = [], []
    extra = _extra(rows)
    for tau in _q_profile_taus(xhat, y, s, 10 - 2, probs, top, extra):
        w = 1 / (s**2 + tau**2 + extra)
        res = sm.WLS(y, sm.add_constant(xhat), weights=w).fit()
        cov = res.normalized_cov_params
        b = res.params[1]
        means.append(h @ res.params)
        sds.append(math.sqrt(h @ cov @ h + tau**2 + (b**2 + cov[1, 1]) * lam0 * sigma0**2))
    m, sd = np.array(means), np.array(sds)
    f = predict(fit(rows), x0, sigma0, mde=0.02)
    assert f.status == "ok" and f.interval is not None
    assert f.p_positive == pytest.approx(np.mean(st.norm.sf(0, m, sd)), abs=0.005)
    assert f.p_above_mde == pytest.approx(np.mean(st.norm.sf(0.02, m, sd)), abs=0.005)
    assert prob_above(f, 0.02) == pytest.approx(f.p_above_mde, abs=1e-12)
    assert f.point == pytest.approx(np.mean(m), abs=2e-4)
    for end, prob in zip(f.interval, (0.025, 0.975), strict=True):
        assert np.mean(st.norm.cdf(end, m, sd)) == pytest.approx(prob, abs=0.003)


def test_confidence_weights_are_the_q_profile_distribution():
    """The weight at τ = 0 is H(0) = P(χ²_{k−2} > Q(0)) plus half of H's rise
    to the next grid point (the grid splits each increment between its ends);
    the weights' median τ is the
    Q-profile median (the root of Q(τ) = χ²_{k−2} median), within a grid step."""
    rows = _history(k=12, tau=0.012)
    x, sx, y, s = _arrays(rows)
    xhat, _ = _calibrated(x, sx)
    f = fit(rows)
    assert f.grid is not None
    h = []
    extra = _extra(rows)
    for tau in f.grid.tau[:2]:
        w = 1 / (s**2 + tau**2 + extra)
        res = sm.WLS(y, sm.add_constant(xhat), weights=w).fit()
        h.append(st.chi2.sf(float(np.sum(w * res.resid**2)), 10))
    assert f.grid.weight[0] == pytest.approx(h[0] + (h[1] - h[0]) / 2, rel=1e-9)
    top = 30 * max(np.std(y, ddof=1), np.median(s))
    median = _q_profile_taus(xhat, y, s, 10, [0.5], top, extra)[0]
    assert median > 0
    cum = np.cumsum(f.grid.weight)
    at_median = f.grid.tau[int(np.searchsorted(cum, 0.5))]
    step = (fb.GRID_TOP / fb.GRID_BOTTOM) ** (1 / (fb.GRID_POINTS - 2))
    assert median / step <= at_median <= median * step


def test_coverage_of_true_lift_in_simulation():
    """The 95% interval covers a held-out θ₀ in about 95% of histories (k = 12,
    τ = median s, σ = s/2): 600 runs, the band is ±3.5 binomial sds."""
    rng = np.random.default_rng(11)
    runs, k = 600, 12
    s = rng.uniform(0.006, 0.014, (runs, k + 1))
    xi = rng.normal(0.005, 0.02, (runs, k + 1))
    x = xi + rng.normal(size=xi.shape) * s / 2
    theta = 0.8 * xi + rng.normal(size=xi.shape) * 0.01
    y = theta + rng.normal(size=xi.shape) * s
    cal = fb.calibrate(x[:, 1:], s[:, 1:] / 2)
    grid, _ = fb.eiv_fit(cal, s[:, 1:] / 2, y[:, 1:], s[:, 1:])
    x0, resid0 = fb.shrink(cal, x[:, 0], s[:, 0] / 2)
    mix = fb.predictive(grid, fb.confidence_weights(grid, k - 2), x0, resid0)
    covered = (mix.quantile(0.025) <= theta[:, 0]) & (theta[:, 0] <= mix.quantile(0.975))
    band = 3.5 * math.sqrt(0.95 * 0.05 / runs)
    assert abs(covered.mean() - 0.95) < band


@pytest.mark.parametrize(
    ("rows", "status"),
    [
        (_history(k=2), "too_few_experiments"),
        ([HistoryRow(0.01 * i, 0.0, 0.01, 0.0) for i in range(4)], "invalid_input"),
        ([HistoryRow(0.01 * i, 0.0, math.nan, 0.01) for i in range(4)], "invalid_input"),
    ],
)
def test_degenerate_histories_give_a_status(rows, status):
    f = fit(rows)
    assert f.status == status and f.slope is None and f.message
    p = predict(f, 0.03, 0.01)
    assert p.status == status and p.interval is None
    assert prob_above(p, 0.0) is None


def test_too_few_says_how_many():
    assert fit(_history(k=2)).message == "2 past experiments: the forecast needs 3 or more"


def test_three_experiments_fit_with_t_1():
    """k = 3: the slope's HKSJ interval uses t with 1 degree of freedom
    (q = Q(τ̂) / 1), and the forecast is a proper, finite interval."""
    rows = _history(k=3, seed=7)
    x, sx, y, s = _arrays(rows)
    xhat, _ = _calibrated(x, sx)
    f = fit(rows)
    assert f.status == "ok" and f.slope_interval is not None and f.tau is not None
    w = 1 / (s**2 + f.tau**2 + _extra(rows))
    res = sm.WLS(y, sm.add_constant(xhat), weights=w).fit()
    se = math.sqrt(np.sum(w * res.resid**2) * res.normalized_cov_params[1, 1])
    half = st.t.ppf(0.975, 1) * se
    assert f.slope_interval == pytest.approx((res.params[1] - half, res.params[1] + half))
    p = predict(f, 0.03, 0.004)
    assert p.interval is not None and all(math.isfinite(v) for v in p.interval)
    assert p.interval[0] < p.interval[1]


def test_a_bad_candidate_is_a_status():
    p = predict(fit(_history()), math.inf, 0.01)
    assert p.status == "invalid_input" and p.point is None


def test_log_score_and_observed_interval_add_the_test_s_noise():
    """Against the mixture written out with scipy: density of N(m_g, sd_g² + se²)."""
    f = predict(fit(_history()), 0.031, 0.008)
    se = 0.01
    w, m, sd = (np.array(v) for v in (f.weights, f.means, f.sds))
    total = np.sqrt(sd**2 + se**2)
    for y in (-0.02, 0.015, 0.08):
        expected = math.log(float(np.sum(w * st.norm.pdf(y, m, total))))
        assert log_score(f, y, se) == pytest.approx(expected, rel=1e-9)
    low, high = observed_interval(f, se) or (0.0, 0.0)
    for end, prob in ((low, 0.025), (high, 0.975)):
        assert float(np.sum(w * st.norm.cdf(end, m, total))) == pytest.approx(prob, abs=1e-9)
    assert f.interval is not None and low < f.interval[0] and high > f.interval[1]
    none = predict(fit(_history(k=2)), 0.03, 0.01)
    assert log_score(none, 0.0, 0.01) is None and observed_interval(none, 0.01) is None


def test_small_k_is_the_reml_interval_with_t_k_minus_2():
    """Below SMALL_K experiments: θ̂₀ ± t(k − 2) √(q hᵀCh + τ̂² + (β̂² + q C₁₁) λ₀σ₀²)
    at the REML τ̂ (statsmodels WLS with the calibration error in the weights,
    q = max(Q / (k − 2), 1), scipy's t); the mixture approximates t within 0.2%."""
    k = 5
    rows = _history(k=k, seed=9, tau=0.004)
    x, sx, y, s = _arrays(rows)
    xhat, s2 = _calibrated(x, sx)
    f = fit(rows)
    assert k < SMALL_K and f.interval_method == "reml_t" and f.tau is not None
    w = 1 / (s**2 + f.tau**2 + _extra(rows))
    res = sm.WLS(y, sm.add_constant(xhat), weights=w).fit()
    q = max(np.sum(w * res.resid**2) / (k - 2), 1.0)
    x0, sigma0 = 0.03, 0.006
    lam0 = s2 / (s2 + sigma0**2)
    h = np.array([1.0, x.mean() + lam0 * (x0 - x.mean())])
    cov = res.normalized_cov_params
    b = res.params[1]
    var = q * h @ cov @ h + f.tau**2 + (b**2 + q * cov[1, 1]) * lam0 * sigma0**2
    half = st.t.ppf(0.975, k - 2) * math.sqrt(var)
    p = predict(f, x0, sigma0)
    assert p.interval is not None and p.point is not None
    assert p.point == pytest.approx(h @ res.params, rel=1e-9)
    assert p.interval[0] == pytest.approx(h @ res.params - half, abs=0.002 * half)
    assert p.interval[1] == pytest.approx(h @ res.params + half, abs=0.002 * half)
    assert p.p_positive == pytest.approx(st.t.sf(-h @ res.params / math.sqrt(var), k - 2), abs=2e-3)


def _noise_only(k):
    """Offline lifts that are their own noise: σ equal to their whole spread."""
    rng = np.random.default_rng(5)
    s = rng.uniform(0.006, 0.014, k)
    y = 0.003 + rng.normal(0, 0.005, k) + rng.normal(0, 1, k) * s
    x = rng.normal(0.0, 0.01, k)
    return [HistoryRow(float(a), 0.02, float(b), float(c), f"e{i}")
            for i, (a, b, c) in enumerate(zip(x, y, s, strict=True))]  # fmt: skip


def test_a_weak_signal_gets_the_intercept_only_forecast():
    """var(x) − mean(σ²) below 5% of var(x): no refusal but y = α + u + e, here
    (k = 6, REML plug-in) ȳ_w(τ̂) ± t(k − 1) √(q / Σw + τ̂²), q = max(Q(τ̂) / (k − 1), 1),
    whatever the candidate's offline lift."""
    k = 6
    rows = _noise_only(k)
    _, _, y, s = _arrays(rows)
    f = fit(rows)
    assert (f.status, f.model, f.reason, f.slope) == ("ok", "intercept_only", "weak_signal", None)
    assert "noise" in f.message and f.tau is not None
    w = 1 / (s**2 + f.tau**2)
    mean = float(np.sum(w * y) / np.sum(w))
    q = max(float(np.sum(w * (y - mean) ** 2)) / (k - 1), 1.0)
    half = st.t.ppf(0.975, k - 1) * math.sqrt(q / np.sum(w) + f.tau**2)
    for x0 in (-0.05, 0.0, 0.08):
        p = predict(f, x0, 0.01)
        assert (p.status, p.model, p.reason) == ("ok", "intercept_only", "weak_signal")
        assert p.point == pytest.approx(mean, rel=1e-9)
        assert p.interval == pytest.approx((mean - half, mean + half), abs=0.002 * half)

    # the REML τ̂ of the intercept-only model, against scipy's maximiser
    def reml(tau):
        v = s**2 + tau**2
        sw = np.sum(1 / v)
        m = np.sum(y / v) / sw
        return -0.5 * (np.sum(np.log(v)) + math.log(sw) + np.sum((y - m) ** 2 / v))

    grid = fb.tau_grid(y[None], s[None])[0]
    assert f.tau == grid[int(np.argmax([reml(t) for t in grid]))]


def test_equal_offline_lifts_get_the_intercept_only_forecast():
    rows = [HistoryRow(0.01, 0.0, 0.01 * i, 0.01) for i in range(4)]
    f = fit(rows)
    assert (f.status, f.model, f.reason) == ("ok", "intercept_only", "no_variation")
    p = predict(f, 0.03, 0.01)
    assert p.status == "ok" and p.point == pytest.approx(0.015)  # equal weights: the mean


def test_influence_names_an_outlier_and_forecasts_without_it():
    """One experiment moved by 10 standard errors: its leave-one-out two-sided
    predictive p-value (the others' forecast of its observed lift, from the held-out
    mixture with scipy's normal), times k, is the smallest and below 5%; the
    forecast without it is the fit on the other nine. A clean history names none."""
    rows = _history(k=10, seed=12, tau=0.004)
    moved = rows[3].online_lift + 10 * rows[3].online_se
    rows[3] = HistoryRow(rows[3].offline_lift, rows[3].offline_se, moved, rows[3].online_se, "e3")
    p = predict(fit(rows), 0.03, 0.004)
    found = influence(rows, p)
    assert found is not None and found.flagged and found.experiment == "e3"
    rest = rows[:3] + rows[4:]
    held = predict(fit(rest), rows[3].offline_lift, rows[3].offline_se)
    sd = np.sqrt(np.array(held.sds) ** 2 + rows[3].online_se ** 2)
    below = float(np.sum(np.array(held.weights) * st.norm.cdf(moved, held.means, sd)))
    assert found.p_value == pytest.approx(min(1.0, 10 * 2 * min(below, 1 - below)), rel=1e-6)
    without = predict(fit(rest), 0.03, 0.004)
    assert found.point == pytest.approx(without.point) and found.interval == without.interval
    assert p.interval is not None and without.interval is not None
    assert without.interval[1] - without.interval[0] < p.interval[1] - p.interval[0]
    clean = influence(_history(k=10, seed=12, tau=0.004), p)
    assert clean is not None and not clean.flagged and clean.p_value > 0.05
