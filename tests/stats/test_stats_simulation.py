"""Seeded simulations of a CTR-like ratio metric: the per-user delta-method test
holds its level, its intervals cover, it recovers a known lift; a per-impression
binomial test on the same data does not hold its level.

Data: each user has a click propensity pᵢ = 0.8·Beta(0.5, 4.5) (mean 0.08) and
1 + Poisson(λᵢ) impressions with λᵢ ~ Gamma(1, 9) (mean 10), clicks ~
Binomial(impressions, pᵢ); treatment multiplies every propensity by 1 + lift,
so the true relative lift of CTR = E[clicks]/E[impressions] is exactly ``lift``.

Why the naive test fails: impressions of one user are not independent draws,
they share the user's propensity. The intra-user correlation is
ρ = Var(p)/(E p·(1 − E p)) = 0.0096/(0.08·0.92) ≈ 0.13, and with impressions per
user of mean m̄ = 10 and squared coefficient of variation CV² = 90/100 = 0.9 the
design effect (Kish 1965) is about 1 + (m̄·(1 + CV²) − 1)·ρ ≈ 3.3: the binomial
variance is ~3.3 times too small, its z about 1.8 times too large, and an A/A
test rejects at roughly 25-30% instead of 5%.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from abeval.stats import RatioStats, compare

REPS, USERS = 600, 2000
ALPHA = 0.05


def _simulate(lift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """clicks and impressions, shape (REPS, 2 arms, USERS)."""
    rng = np.random.default_rng(seed)
    shape = (REPS, 2, USERS)
    propensity = 0.8 * rng.beta(0.5, 4.5, shape)
    propensity[:, 1] *= 1 + lift  # ≤ 1 for lift ≤ 0.25
    impressions = 1 + rng.poisson(rng.gamma(1.0, 9.0, shape))
    clicks = rng.binomial(impressions, propensity)
    return clicks.astype(float), impressions.astype(float)


def _arm_stats(clicks: np.ndarray, impressions: np.ndarray) -> list[list[RatioStats]]:
    """RatioStats per (replication, arm) from vectorised sums."""
    n = clicks.shape[-1]
    m_sum, d_sum = clicks.sum(-1), impressions.sum(-1)
    mc, dc = (
        clicks - clicks.mean(-1, keepdims=True),
        impressions - impressions.mean(-1, keepdims=True),
    )
    m_ss, d_ss, cross = (mc * mc).sum(-1), (dc * dc).sum(-1), (mc * dc).sum(-1)
    return [
        [
            RatioStats(n, m_sum[r, a], m_ss[r, a], d_sum[r, a], d_ss[r, a], cross[r, a])
            for a in range(2)
        ]
        for r in range(clicks.shape[0])
    ]


def _within(rate: float, target: float, reps: int = REPS) -> bool:
    return abs(rate - target) < 3 * math.sqrt(target * (1 - target) / reps)


@pytest.fixture(scope="module")
def aa() -> tuple[np.ndarray, np.ndarray]:
    return _simulate(0.0, seed=20240601)


def test_aa_rejects_at_alpha_and_covers(aa: tuple[np.ndarray, np.ndarray]) -> None:
    results = [compare(c, t, alpha=ALPHA) for c, t in _arm_stats(*aa)]
    assert all(r.status == "ok" for r in results)
    for scale in ("absolute", "relative"):
        p = np.array([getattr(r, scale).p_value for r in results])
        assert _within(float((p < ALPHA).mean()), ALPHA), (scale, (p < ALPHA).mean())
        # under the null, p-values are uniform: a second, finer check of the level
        assert sps.kstest(p, "uniform").pvalue > 0.001


def test_naive_per_impression_test_over_rejects(aa: tuple[np.ndarray, np.ndarray]) -> None:
    clicks, impressions = aa
    k, d = clicks.sum(-1), impressions.sum(-1)  # (REPS, 2)
    rate = k / d
    pooled = k.sum(-1) / d.sum(-1)
    naive_var = pooled * (1 - pooled) * (1 / d[:, 0] + 1 / d[:, 1])
    z = (rate[:, 1] - rate[:, 0]) / np.sqrt(naive_var)
    naive_rejections = float((np.abs(z) > sps.norm.isf(ALPHA / 2)).mean())
    assert naive_rejections > 0.15  # vs 5% nominal; about 27% expected from the design effect
    # the observed design effect: true variance of the difference over the binomial one
    design_effect = float(np.var(rate[:, 1] - rate[:, 0]) / naive_var.mean())
    assert 2.5 < design_effect < 4.5


def test_known_lift_is_recovered_and_covered() -> None:
    lift = 0.25  # propensities stay ≤ 0.8·1.25 = 1
    results = [compare(c, t, alpha=ALPHA) for c, t in _arm_stats(*_simulate(lift, seed=7))]
    effect = np.array([r.relative.effect for r in results], dtype=float)
    se = np.array([r.relative.se for r in results], dtype=float)
    low = np.array([r.relative.ci[0] for r in results if r.relative.ci])
    high = np.array([r.relative.ci[1] for r in results if r.relative.ci])
    assert _within(float(((low <= lift) & (lift <= high)).mean()), 1 - ALPHA)
    assert abs(effect.mean() - lift) < 3 * effect.std(ddof=1) / math.sqrt(REPS)
    # the delta-method standard error matches the spread of the estimates
    assert float(np.mean(se)) == pytest.approx(float(effect.std(ddof=1)), rel=0.1)
    assert float(np.mean([(r.relative.p_value or 1) < ALPHA for r in results])) > 0.5
