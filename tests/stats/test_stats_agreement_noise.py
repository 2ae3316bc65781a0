"""The noise-aware board's statistics (abeval.stats.agreement_noise and
abeval.stats.agreement_familywise, docs/metrics.md#noise-aware-board): the
reliability and the shrinkage probabilities by hand, the noise ceiling against
scipy's Spearman over the documented draws, and the family-wise permutation
p-value against every permutation enumerated in the test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as st

from abeval.stats.agreement import Point
from abeval.stats.agreement_familywise import familywise_p
from abeval.stats.agreement_noise import (
    MIN_CEILING,
    expected_precision,
    noise_ceiling,
    p_positive,
    reliability,
    rho_over_ceiling,
    signal_variance,
)


def test_reliability_and_signal_variance_by_hand() -> None:
    # y = 1%, 3%, 5%: mean 3%, var (k − 1) = (0.0004 + 0 + 0.0004) / 2 = 0.0004;
    # s = 1% each, mean s² = 0.0001: R = 1 − 0.0001 / 0.0004 = 0.75, T² = 0.0003.
    y, s = [0.01, 0.03, 0.05], [0.01, 0.01, 0.01]
    assert reliability(y, s) == pytest.approx(0.75)
    assert signal_variance(y, s) == pytest.approx(0.0003)
    # Noisier than they vary: both floored at 0.
    assert reliability(y, [0.05] * 3) == 0.0
    assert signal_variance(y, [0.05] * 3) == 0.0
    assert reliability([0.02] * 3, s) == 0.0


def test_noise_ceiling_is_the_mean_spearman_over_the_documented_draws() -> None:
    y = [0.01, -0.02, 0.035, 0.0, 0.05, -0.01, 0.02]
    s = [0.008, 0.01, 0.006, 0.009, 0.012, 0.007, None]  # the last is left out
    c = noise_ceiling(y, s, draws=300, seed=4)
    ys, ss = np.array(y[:6]), np.array(s[:6], dtype=float)
    t2 = np.var(ys, ddof=1) - np.mean(ss**2)
    rng = np.random.default_rng(4)
    theta = rng.normal(ys.mean(), math.sqrt(t2), size=(300, 6))
    noisy = theta + rng.normal(0.0, ss, size=(300, 6))
    expected = np.mean([st.spearmanr(a, b).statistic for a, b in zip(theta, noisy, strict=True)])
    assert c.status == "ok" and c.points == 6 and c.draws == 300
    assert c.signal_variance == pytest.approx(t2)
    assert c.reliability == pytest.approx(1 - np.mean(ss**2) / np.var(ys, ddof=1))
    assert c.ceiling == pytest.approx(expected, rel=1e-12)
    assert rho_over_ceiling(0.5, c) == pytest.approx(0.5 / expected)


def test_a_perfect_predictor_without_noise_has_ceiling_one() -> None:
    c = noise_ceiling([0.01, 0.02, 0.04, 0.03], [0.0] * 4, draws=50)
    assert c.ceiling == pytest.approx(1.0)


def test_ceiling_statuses() -> None:
    few = noise_ceiling([0.01, 0.02], [0.01, 0.01])
    assert few.status == "too_few_points" and few.ceiling is None
    flat = noise_ceiling([0.01, 0.03, 0.05], [0.05] * 3)
    assert flat.status == "no_signal_variance" and flat.ceiling == 0.0
    assert rho_over_ceiling(0.9, flat) is None
    # var(y) just above the noise: T² tiny against s², the ceiling near 0.
    y = [0.0, 0.0101, 0.0202]
    small = noise_ceiling(y, [0.01] * 3, draws=500)
    assert small.status == "ceiling_too_small" and small.ceiling is not None
    assert abs(small.ceiling) < MIN_CEILING
    assert rho_over_ceiling(0.9, small) is None


def test_p_positive_is_the_conjugate_posterior() -> None:
    # Posterior precision 1/T² + 1/s², mean (μ/T² + y/s²) / precision.
    mu, t2, y, s = 0.005, 0.0002, 0.02, 0.01
    precision = 1 / t2 + 1 / s**2
    mean = (mu / t2 + y / s**2) / precision
    assert p_positive(y, s, mu, t2) == pytest.approx(st.norm.cdf(mean * math.sqrt(precision)))
    assert p_positive(-0.5, 0.01, 0.01, 0.0) == 1.0  # no spread: everything is the prior mean
    assert p_positive(0.01, 0.0, -0.1, 0.01) == 1.0  # no noise: the lift is what was seen


def test_expected_precision_by_hand() -> None:
    y = [0.03, -0.01, 0.01, 0.05]
    s = [0.01, 0.01, 0.02, 0.01]
    says = [True, False, True, False]
    e = expected_precision(y, s, says)
    mu = np.mean(y)
    t2 = np.var(y, ddof=1) - np.mean(np.square(s))
    probs = [p_positive(a, b, float(mu), float(t2)) for a, b in zip(y, s, strict=True)]
    assert e.says == 2
    assert e.prior_mean == pytest.approx(mu) and e.prior_variance == pytest.approx(t2)
    assert e.expected_true_positives == pytest.approx(probs[0] + probs[2])
    assert e.expected_precision == pytest.approx((probs[0] + probs[2]) / 2)
    assert expected_precision(y, s, [False] * 4).expected_precision is None


# --------------------------------------------------------------------------- family-wise


def _brute_force(signals: list[list[Point]]) -> list[float]:
    """Every permutation of the experiments that maps each onto one with as many
    arms (arm j onto arm j, arms sorted), scipy's Spearman per signal, the max."""
    online = {(p.cluster, p.arm): p.online for sig in signals for p in sig}
    experiments = sorted({c for c, _ in online})
    arms = {e: sorted(a for c, a in online if c == e) for e in experiments}
    observed = [st.spearmanr([p.offline for p in sig], [p.online for p in sig]).statistic
                for sig in signals]  # fmt: skip
    maxima = []
    for image in itertools.permutations(experiments):
        to = dict(zip(experiments, image, strict=True))
        if any(len(arms[e]) != len(arms[to[e]]) for e in experiments):
            continue
        rhos = []
        for sig in signals:
            y = [online[(to[p.cluster], arms[to[p.cluster]][arms[p.cluster].index(p.arm)])]
                 for p in sig]  # fmt: skip
            rhos.append(st.spearmanr([p.offline for p in sig], y).statistic)
        maxima.append(max(r for r in rhos if np.isfinite(r)))
    return [float(np.mean(np.array(maxima) >= o - 1e-12)) for o in observed]


def test_familywise_p_is_exact_over_single_arm_experiments() -> None:
    online = {"a": 0.01, "b": 0.03, "c": -0.02, "d": 0.04, "e": 0.0}
    offline = [
        {"a": 0.2, "b": 0.5, "c": -0.1, "d": 0.9, "e": 0.1},  # ranks them right
        {"a": 0.3, "b": -0.2, "c": 0.4, "d": 0.0, "e": 0.1},
        {"a": 0.1, "b": 0.1, "c": 0.2, "d": 0.3},  # a tie, one experiment missing
    ]
    signals = [[Point(e, x, online[e], arm="t") for e, x in sig.items()] for sig in offline]
    found = familywise_p(signals)
    assert found.exact and found.permutations == math.factorial(5)
    assert found.p_values == pytest.approx(_brute_force(signals), abs=1e-12)
    # ρ = 1 is reached by the first signal under the identity and by the second
    # under the one permutation that orders the online lifts as it does: 2 of 120.
    assert found.p_values[0] == pytest.approx(2 / 120)


def test_familywise_p_moves_an_experiments_arms_together() -> None:
    # Two experiments with two arms sharing a control, three with one.
    rows = [("a", "t1", 0.1, 0.02), ("a", "t2", 0.3, 0.03), ("b", "t", -0.2, -0.01),
            ("c", "t", 0.05, 0.0), ("d", "t1", 0.4, 0.05), ("d", "t2", -0.1, 0.01),
            ("e", "t", 0.2, 0.015)]  # fmt: skip
    one = [Point(c, x, y, arm=a) for c, a, x, y in rows]
    other = [Point(c, -x * x, y, arm=a) for c, a, x, y in rows]
    found = familywise_p([one, other])
    assert found.exact and found.permutations == math.factorial(3) * math.factorial(2)
    assert found.p_values == pytest.approx(_brute_force([one, other]), abs=1e-12)
    # Each signal's own ρ is the one the board shows (scipy over its points).
    assert found.observed[0] == pytest.approx(
        st.spearmanr([p.offline for p in one], [p.online for p in one]).statistic
    )


def test_familywise_p_by_random_permutations_beyond_the_exact_limit() -> None:
    rng = np.random.default_rng(2)
    truth = rng.normal(0, 1, 10)
    good = [Point(f"e{i}", float(t), float(t + rng.normal(0, 0.1)), arm="t")
            for i, t in enumerate(truth)]  # fmt: skip
    noise = [Point(p.cluster, float(rng.normal()), p.online, arm="t") for p in good]
    found = familywise_p([good, noise], resamples=500, seed=1)
    assert not found.exact and found.permutations == 500
    assert found.p_values[0] == pytest.approx(1 / 501)  # nothing beats it
    assert found.p_values[1] is not None and found.p_values[1] > 0.05


def test_familywise_p_with_too_few_experiments() -> None:
    points = [Point("a", 0.1, 0.2, arm="t"), Point("b", 0.2, 0.3, arm="t")]
    found = familywise_p([points])
    assert found.status == "too_few_experiments" and found.p_values == (None,)
