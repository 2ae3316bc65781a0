"""Power of the α-spending test over daily looks (abeval.stats.spending_power) and
the power rows and guardrail plans built on it (abeval.analysis.power_rows,
docs/metrics.md#power-and-mde), against scipy's multivariate normal, a numpy
simulation and statsmodels' fixed-horizon power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from abeval.analysis.power_rows import (
    guardrail_planning_power,
    guardrail_powers,
    power_info,
)
from abeval.analysis.report_model import ReportOptions
from abeval.stats.spending import spending_boundaries
from abeval.stats.spending_power import (
    crossing_probabilities,
    daily_fractions,
    planned_looks,
    spending_noncentrality,
    spending_power,
    upper_crossings,
)
from abeval.stats.sufficient import MeanStats


def mvn_crossing(fractions: tuple[float, ...], drift: float, alpha: float) -> float:
    """1 − P(|Z_k| < c_k at every look), Z_k ~ N(drift·√t_k, 1) with
    Cov(Z_j, Z_k) = √(t_j/t_k): scipy's multivariate normal over the rectangle."""
    t = np.array(fractions)
    c = np.array(spending_boundaries(fractions, alpha))
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mean = drift * np.sqrt(t)
    law = stats.multivariate_normal(mean=mean, cov=cov)
    inside = law.cdf(c, lower_limit=-c, rng=np.random.default_rng(1))
    return 1.0 - float(inside)


def test_one_look_is_the_fixed_horizon_power() -> None:
    z = stats.norm.isf(0.025)
    for drift in (0.0, 1.0, 2.8016):
        expected = stats.norm.cdf(drift - z) + stats.norm.cdf(-drift - z)
        assert spending_power((1.0,), drift, 0.05) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("fractions", [(1 / 3, 2 / 3, 1.0), (0.25, 0.5, 0.75, 1.0)])
@pytest.mark.parametrize("drift", [0.0, 1.5, 2.8])
def test_crossing_matches_the_multivariate_normal(
    fractions: tuple[float, ...], drift: float
) -> None:
    expected = mvn_crossing(fractions, drift, 0.05)
    assert spending_power(fractions, drift, 0.05) == pytest.approx(expected, abs=2e-4)


def test_crossing_matches_a_simulation_over_fourteen_daily_looks() -> None:
    """Brownian paths of 14 daily looks, 200,000 runs, seed 7: the upper and the
    lower crossing probabilities within 4 standard errors."""
    looks, drift, runs = 14, 2.5, 200_000
    fractions = daily_fractions(looks)
    c = np.array(spending_boundaries(fractions, 0.05))
    t = np.array(fractions)
    rng = np.random.default_rng(7)
    steps = rng.normal(drift / looks, math.sqrt(1 / looks), size=(runs, looks))
    z = np.cumsum(steps, axis=1) / np.sqrt(t)
    crossed = np.abs(z) >= c
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    hit = first >= 0
    sign = np.sign(z[np.arange(runs), np.maximum(first, 0)])
    up_sim, down_sim = np.mean(hit & (sign > 0)), np.mean(hit & (sign < 0))
    up, down = crossing_probabilities(fractions, drift, 0.05)
    for found, simulated in ((up, up_sim), (down, down_sim)):
        se = math.sqrt(max(simulated * (1 - simulated), 1e-6) / runs)
        assert abs(found - simulated) < 4 * se + 1e-5


def test_a_null_effect_crosses_with_probability_alpha() -> None:
    for looks in (2, 14, 28):
        up, down = crossing_probabilities(daily_fractions(looks), 0.0, 0.05)
        assert up == pytest.approx(0.025, abs=1e-5)
        assert down == pytest.approx(0.025, abs=1e-5)


def test_the_spending_noncentrality_reaches_the_power_and_exceeds_the_fixed_one() -> None:
    fixed = stats.norm.isf(0.025) + stats.norm.isf(0.2)  # far tail negligible
    lam5 = spending_noncentrality(daily_fractions(5), 0.8, 0.05)
    assert mvn_crossing(daily_fractions(5), lam5, 0.05) == pytest.approx(0.8, abs=2e-3)
    previous = fixed
    for looks in (5, 14, 28):
        fractions = daily_fractions(looks)
        lam = spending_noncentrality(fractions, 0.8, 0.05)
        assert spending_power(fractions, lam, 0.05) == pytest.approx(0.8, abs=1e-6)
        # more looks, a higher last boundary: a larger effect (more users) is needed
        assert previous < lam < fixed * 1.04
        previous = lam


def test_planned_looks_are_the_days_the_users_take() -> None:
    assert planned_looks(10_000, 1_000.0) == 10
    assert planned_looks(10_001, 1_000.0) == 11
    assert planned_looks(10_000, None) == 14
    assert planned_looks(10**9, 10.0) == 56


def arm(p: float, n: int) -> MeanStats:
    """A proportion's sufficient statistics: n users, n·p successes."""
    k = round(n * p)
    return MeanStats.from_sums(n, k, k)


def fixed_noncentrality(power: float, alpha: float) -> float:
    """λ with Φ(λ − z) + Φ(−λ − z) = power, by scipy's root finder."""
    from scipy.optimize import brentq

    z = stats.norm.isf(alpha / 2)
    return float(brentq(lambda x: stats.norm.cdf(x - z) + stats.norm.cdf(-x - z) - power, 0, 10))


def test_a_power_row_without_a_plan_gives_the_power_under_daily_looks() -> None:
    o = ReportOptions(primary=("conversion",), target_mde=0.05, power=0.8)
    stats_ = (arm(0.1, 5_000), arm(0.1, 5_000))
    row = power_info("conversion", "treatment", stats_, 2, 30_000.0, o, family=1)
    need = row.needed_for_target
    assert need.total_users is not None
    # the looks: the days the needed users take at 30,000 a day (about 113,000 users)
    assert row.looks == math.ceil(need.total_users / 30_000) == 4
    fractions = daily_fractions(row.looks)
    lam = fixed_noncentrality(0.8, 0.05)
    assert row.power_with_looks == pytest.approx(mvn_crossing(fractions, lam, 0.05), abs=5e-4)
    assert row.power_with_looks < 0.8
    inflation = (spending_noncentrality(fractions, 0.8, 0.05) / lam) ** 2
    assert row.users_with_looks == pytest.approx(need.total_users * inflation, abs=1)
    # a recorded plan: the fixed test at the planned look holds, nothing added
    recorded = ReportOptions(primary=("conversion",), target_mde=0.05, plan_users=40_000)
    planned = power_info("conversion", "treatment", stats_, 2, 30_000.0, recorded)
    assert (planned.looks, planned.power_with_looks, planned.users_with_looks) == (None,) * 3


def test_guardrails_are_powered_all_at_once() -> None:
    """Two guardrails with a margin, one arm: each is planned at power 1 − 0.2/2 =
    0.9 and α/2, so that both are shown non-inferior together with probability at
    least 0.8 (Bonferroni on the misses); statsmodels' users per arm."""
    from statsmodels.stats.power import zt_ind_solve_power

    assert guardrail_planning_power(0.8, 1) == pytest.approx(0.8)
    assert guardrail_planning_power(0.8, 4) == pytest.approx(0.95)
    o = ReportOptions(
        guardrails=("conversion", "clicks_per_user", "aov"),
        margins=(("conversion", 0.02), ("clicks_per_user", 0.03)),
        plan_users=100_000,
    )
    plain = {
        ("conversion", "treatment"): (arm(0.2, 5_000), arm(0.2, 5_000)),
        ("clicks_per_user", "treatment"): (arm(0.4, 5_000), arm(0.4, 5_000)),
        ("aov", "treatment"): (arm(0.3, 5_000), arm(0.3, 5_000)),
    }
    rows = guardrail_powers(plain, (), ["treatment"], o)  # type: ignore[arg-type]
    assert [g.metric for g in rows] == ["conversion", "clicks_per_user"]
    for g, p, margin in zip(rows, (0.2, 0.4), (0.02, 0.03), strict=True):
        # α over the three guardrails the decision corrects; power over the two with a margin
        assert (g.needed.alpha, g.needed.power) == (pytest.approx(0.05 / 3), pytest.approx(0.9))
        effect = margin * p / math.sqrt(p * (1 - p) * 5_000 / 4_999)  # the sample variance
        per_arm = zt_ind_solve_power(effect_size=effect, alpha=0.05 / 3, power=0.9, ratio=1.0)
        assert g.needed.users_by_arm is not None
        assert g.needed.users_by_arm[0] == pytest.approx(float(per_arm), abs=1)


def test_the_change_of_measure_agrees_with_the_drift_recursion() -> None:
    """:func:`upper_crossings` (one null recursion, tilted) against the upper
    crossing of :func:`crossing_probabilities` (a recursion per drift)."""
    for looks in (1, 5, 14):
        fractions = daily_fractions(looks)
        drifts = [-2.0, 0.0, 1.0, 2.8, 6.0]
        found = upper_crossings(fractions, drifts, 0.05)
        for drift, value in zip(drifts, found, strict=True):
            assert value == pytest.approx(
                crossing_probabilities(fractions, drift, 0.05)[0], abs=1e-9
            )
