"""Agreement statistics over experiments (abeval.stats.agreement,
docs/metrics.md#agreement-across-experiments): correlations against scipy, the
cluster bootstrap against a resample-by-resample re-derivation, the calibration
slope against hand calculations and statsmodels, decision quality by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as st

from abeval.stats.agreement import (
    Point,
    agreement,
    calibration,
    correlations,
    decision_quality,
    sign_counts,
)

# (experiment, offline lift, online lift): ties in both, two arms in exp-c and exp-f.
LISTED = [
    ("exp-a", -0.10, -0.06),
    ("exp-b", 0.02, 0.01),
    ("exp-c", 0.05, 0.02),
    ("exp-c", 0.05, 0.04),
    ("exp-d", 0.08, 0.03),
    ("exp-e", 0.12, 0.02),
    ("exp-f", -0.03, 0.005),
    ("exp-f", 0.20, 0.09),
    ("exp-g", 0.00, -0.01),
]


def _points(rows=LISTED) -> list[Point]:
    return [Point(c, x, y) for c, x, y in rows]


def test_correlations_match_scipy_on_listed_pairs() -> None:
    x = [r[1] for r in LISTED]
    y = [r[2] for r in LISTED]
    spearman, kendall, pearson = correlations(_points(), 0.05, 200, 0)
    assert spearman.estimate == pytest.approx(st.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall.estimate == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-12)
    assert pearson.estimate == pytest.approx(st.pearsonr(x, y).statistic, abs=1e-12)
    for c in (spearman, kendall, pearson):
        assert c.status == "ok" and c.ci is not None
        assert c.ci[0] <= c.estimate <= c.ci[1]


def _expanded_bootstrap(rows, statistic, resamples: int, seed: int, alpha: float):
    """Redraw the documented resamples (experiments with replacement), expand each
    into its list of pairs, and compute the statistic with scipy."""
    clusters = sorted({r[0] for r in rows})
    draws = np.random.default_rng(seed).integers(0, len(clusters), size=(resamples, len(clusters)))
    values = []
    for draw in draws:
        sample = [r for i in draw for r in rows if r[0] == clusters[i]]
        x = [r[1] for r in sample]
        y = [r[2] for r in sample]
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue  # undefined in this resample
        values.append(statistic(x, y))
    return len(values), tuple(np.quantile(values, [alpha / 2, 1 - alpha / 2]))


@pytest.mark.parametrize(
    ("index", "statistic"),
    [
        (0, lambda x, y: st.spearmanr(x, y).statistic),
        (1, lambda x, y: st.kendalltau(x, y).statistic),
        (2, lambda x, y: st.pearsonr(x, y).statistic),
    ],
)
def test_bootstrap_resamples_experiments(index, statistic) -> None:
    found = correlations(_points(), 0.1, 300, 7)[index]
    used, ci = _expanded_bootstrap(LISTED, statistic, 300, 7, 0.1)
    assert found.resamples_used == used
    assert found.ci == pytest.approx(ci, abs=1e-9)


def test_spearman_permutation_p_value_enumerates_pairings() -> None:
    # Six pairs: every one of the 720 pairings, each ρ by scipy.
    rows = [("a", 0.1, 0.0), ("b", 0.3, 0.2), ("c", 0.2, 0.25), ("d", 0.5, 0.3),
            ("e", 0.4, 0.3), ("f", 0.05, -0.1)]  # fmt: skip
    x = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows])
    observed = st.spearmanr(x, y).statistic
    null = [st.spearmanr(x, y[list(p)]).statistic for p in itertools.permutations(range(6))]
    expected = np.mean(np.array(null) >= observed - 1e-12)
    spearman = correlations(_points(rows), 0.05, 100, 0)[0]
    assert spearman.p_value == pytest.approx(expected, abs=1e-15)
    # Four experiments in perfect order: 1 pairing in 24, though the bootstrap says [1, 1].
    perfect = correlations(_points([(c, i, i * i) for i, c in enumerate("abcd")]), 0.05, 100, 0)
    assert perfect[0].ci == (1.0, 1.0) and perfect[0].p_value == pytest.approx(1 / 24)


def test_spearman_permutation_p_value_by_monte_carlo_beyond_eight_pairs() -> None:
    x = np.array([r[1] for r in LISTED])
    y = np.array([r[2] for r in LISTED])
    observed = st.spearmanr(x, y).statistic
    rng = np.random.default_rng(9)
    null = [st.spearmanr(x, y[rng.permutation(len(x))]).statistic for _ in range(300)]
    hits = int(np.sum(np.array(null) >= observed - 1e-12))
    spearman = correlations(_points(), 0.05, 300, 9)[0]
    assert spearman.p_value == pytest.approx((hits + 1) / 301, abs=1e-15)


def test_bootstrap_is_seeded() -> None:
    first = correlations(_points(), 0.05, 500, 3)
    again = correlations(_points(), 0.05, 500, 3)
    other = correlations(_points(), 0.05, 500, 4)
    assert first == again
    assert first[0].ci != other[0].ci


def test_few_experiments_and_no_variation_are_statuses() -> None:
    two = [Point("a", 0.1, 0.2), Point("a", 0.3, 0.1), Point("b", 0.2, 0.3)]
    a = agreement(two)
    assert a.experiments == 2 and a.points == 3
    for c in (a.spearman, a.kendall, a.pearson):
        assert (c.estimate, c.ci, c.status) == (None, None, "too_few_experiments")
    assert a.calibration.status == "too_few_experiments"  # no standard errors
    flat = [Point(c, 0.05, y, online_se=0.01) for c, y in (("a", 0.1), ("b", 0.2), ("c", 0.0))]
    a = agreement(flat)
    assert a.spearman.status == "no_variation" and a.spearman.estimate is None
    assert a.calibration.status == "no_variation"
    assert agreement([]).sign.share is None


def test_sign_counts_by_hand() -> None:
    points = [
        Point("a", 0.1, 0.2, (0.05, 0.15), (0.1, 0.3)),  # agree, both significant, same side
        Point("b", -0.1, 0.2, (-0.2, -0.01), (0.1, 0.3)),  # disagree, both significant
        Point("c", 0.1, 0.2, (-0.05, 0.2), (0.1, 0.3)),  # agree, offline not significant
        Point("d", 0.0, 0.2, None, (0.1, 0.3)),  # a zero agrees with nothing
        Point("e", -0.1, -0.2, (-0.3, -0.05), (-0.4, -0.1)),  # agree, both below 0
    ]
    s = sign_counts(points)
    assert (s.points, s.agree, s.both_significant, s.both_significant_agree) == (5, 3, 3, 2)
    assert s.share == pytest.approx(3 / 5)


def test_decision_quality_by_hand() -> None:
    up, down, across = (0.01, 0.2), (-0.2, -0.01), (-0.1, 0.1)
    points = [
        Point("a", 0.1, 0.1, up, up),  # TP
        Point("b", 0.1, 0.1, up, up),  # TP
        Point("c", 0.1, 0.0, up, across),  # FP
        Point("d", 0.1, -0.1, up, down),  # FP: online significantly worse
        Point("e", 0.0, 0.1, across, up),  # FN
        Point("f", 0.1, 0.1, None, up),  # FN: no offline interval says nothing
        Point("g", -0.1, 0.0, down, across),  # TN
    ]
    d = decision_quality(points)
    counts = (d.true_positives, d.false_positives, d.false_negatives, d.true_negatives)
    assert counts == (2, 2, 2, 1)
    assert d.precision == pytest.approx(2 / 4)
    assert d.false_negative_rate == pytest.approx(2 / 4)
    none = decision_quality([Point("g", -0.1, 0.0, down, across)])
    assert (none.precision, none.false_negative_rate) == (None, None)


def test_calibration_slope_by_hand() -> None:
    # x = 0, 1, 2; y = 0, 2, 1; se 0.1 each (w = 100). Weighted = ordinary least
    # squares: slope 0.5, intercept 0.5, residuals -0.5, 1, -0.5, so Q = 100 · 1.5 = 150.
    # With equal weights tr((XᵀWX)⁻¹XᵀW²X) = 2w, so the denominator is 300 − 200 = 100
    # and τ² = (150 − (3 − 2)) / 100 = 1.49. New weights 1 / (0.01 + 1.49) are equal:
    # slope 0.5 again, inverse information 1.5 / Σ(x − x̄)² = 0.75. HKSJ scales it by
    # q = Σ w*·residual² / (k − 2) = (1.5 / 1.5) / 1 = 1, and the interval uses t(1).
    points = [Point(c, x, y, online_se=0.1) for c, x, y in (("a", 0, 0), ("b", 1, 2), ("c", 2, 1))]
    c = calibration(points, 0.05)
    assert c.status == "ok" and c.points == 3
    assert c.tau2 == pytest.approx(1.49, rel=1e-12)
    assert c.slope == pytest.approx(0.5, rel=1e-12)
    assert c.intercept == pytest.approx(0.5, rel=1e-12)
    assert c.se == pytest.approx(math.sqrt(0.75), rel=1e-12)
    t = st.t.isf(0.025, 1)
    assert t == pytest.approx(12.7062, abs=1e-4)
    assert c.ci == pytest.approx((0.5 - t * math.sqrt(0.75), 0.5 + t * math.sqrt(0.75)))


def test_calibration_without_heterogeneity_is_weighted_least_squares() -> None:
    # Points close to a line relative to their standard errors: Q < k − 2, τ² = 0,
    # and the fit is WLS with weights 1/se²; the HKSJ variance is WLS's own, scaled
    # by the weighted residual mean square (statsmodels' default), with t(k − 2).
    x = np.array([-0.1, -0.02, 0.0, 0.05, 0.1, 0.2])
    se = np.array([0.02, 0.03, 0.01, 0.02, 0.04, 0.03])
    y = 0.01 + 0.6 * x + np.array([0.004, -0.006, 0.001, -0.002, 0.01, -0.008])
    points = [Point(f"e{i}", *v) for i, v in enumerate(zip(x, y, strict=True))]
    points = [
        Point(p.cluster, p.offline, p.online, online_se=s) for p, s in zip(points, se, strict=True)
    ]
    c = calibration(points, 0.05)
    fit = sm.WLS(y, sm.add_constant(x), weights=1 / se**2).fit()
    assert c.tau2 == 0.0
    assert c.slope == pytest.approx(fit.params[1], rel=1e-10)
    assert c.intercept == pytest.approx(fit.params[0], rel=1e-10)
    assert c.se == pytest.approx(fit.bse[1], rel=1e-10)
    assert c.ci == pytest.approx(tuple(fit.conf_int(0.05)[1]), rel=1e-10)  # t(6 − 2)


def test_calibration_with_heterogeneity_matches_a_re_derivation() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(0, 0.1, 12)
    se = rng.uniform(0.005, 0.03, 12)
    y = 0.8 * x + rng.normal(0, 0.05, 12) + rng.normal(0, se)
    points = [Point(f"e{i}", float(a), float(b), online_se=float(s))
              for i, (a, b, s) in enumerate(zip(x, y, se, strict=True))]  # fmt: skip
    c = calibration(points, 0.05)
    # Method of moments for meta-regression, written out: residual Q of the
    # fixed-effect fit, its expectation k − p + τ² · tr(P), then the random-effects fit.
    X = np.column_stack([np.ones(12), x])
    W = np.diag(1 / se**2)
    P = W - W @ X @ np.linalg.solve(X.T @ W @ X, X.T @ W)
    q = y @ P @ y
    tau2 = max(0.0, (q - 10) / np.trace(P))
    V = np.diag(1 / (se**2 + tau2))
    cov = np.linalg.inv(X.T @ V @ X)
    beta = cov @ X.T @ V @ y
    residual = y - X @ beta
    hksj = (residual @ V @ residual) / (12 - 2) * cov[1, 1]
    assert tau2 > 0
    assert c.tau2 == pytest.approx(tau2, rel=1e-9)
    assert c.slope == pytest.approx(beta[1], rel=1e-9)
    assert c.se == pytest.approx(math.sqrt(hksj), rel=1e-9)
    half = st.t.isf(0.025, 10) * math.sqrt(hksj)
    assert c.ci == pytest.approx((beta[1] - half, beta[1] + half), rel=1e-9)


def test_points_without_a_standard_error_are_left_out_of_the_slope() -> None:
    points = [Point(c, x, y, online_se=s) for c, x, y, s in
              (("a", 0, 0, 0.1), ("b", 1, 2, 0.1), ("c", 2, 1, 0.1), ("d", 3, 9, None),
               ("e", 4, 9, 0.0))]  # fmt: skip
    c = calibration(points, 0.05)
    assert c.points == 3 and c.slope == pytest.approx(0.5)
