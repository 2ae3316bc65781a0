"""A/A calibration: how often each report metric's test rejects when nothing differs.

Both arms draw their users from one population, so every rejection is a false
positive and a calibrated level-α test rejects in a share α of runs. Per user
(docs/metrics.md#relative-lift, "Calibration"):

* impressions 1 + Poisson(8), clicks Binomial(impressions, p) with a per-user
  click propensity p ~ Beta(2, 18): CTR is the ratio Σclicks / Σimpressions;
* a per-user buying propensity q = 0.0625·G with G ~ Gamma(0.5, 2) (mean 1,
  capped so q ≤ 1); the user buys in the experiment with chance q (about 50
  buyers in 800 users) and, separately, in the pre-period with the same chance;
* a buyer places 1 + Poisson(0.3) orders of lognormal value e^N(3.5, σ²),
  σ = 1.3 by default (``order_sigma``):
  conversion is the share of buyers, revenue per user the mean revenue (and
  with CUPED the pre-period revenue as covariate), AOV the ratio
  Σrevenue / Σorders.

Each run computes the per-arm sufficient statistics with numpy and calls
:func:`abeval.stats.compare` directly, with Fieller's relative interval and with
the delta method on the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from abeval.stats.frequentist import compare
from abeval.stats.results import Comparison, RelativeInterval
from abeval.stats.sufficient import ArmStats, CupedStats, MeanStats, ProportionStats, RatioStats

#: Log-scale standard deviation of an order's value (the heavier of the two tails
#: benchmarked; 1.0 is the other).
ORDER_SIGMA = 1.3

#: The metrics simulated, in the report's order.
METRICS = ("ctr", "conversion", "revenue_per_user", "revenue_per_user_cuped", "aov")


@dataclass(frozen=True)
class Users:
    """One arm's simulated users: per-user counts and sums."""

    impressions: np.ndarray
    clicks: np.ndarray
    orders: np.ndarray
    revenue: np.ndarray
    pre_revenue: np.ndarray


@dataclass(frozen=True)
class Rates:
    """Share of runs that rejected at α, per metric, by each way of testing."""

    runs: int
    alpha: float
    fieller: dict[str, float]
    delta: dict[str, float]
    absolute: dict[str, float]
    unbounded: dict[str, float]


def _revenue(
    rng: np.random.Generator, buys: np.ndarray, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    orders = np.where(buys, 1 + rng.poisson(0.3, buys.size), 0)
    values = rng.lognormal(3.5, sigma, int(orders.sum()))
    owner = np.repeat(np.arange(buys.size), orders)
    return orders, np.bincount(owner, weights=values, minlength=buys.size)


def simulate_users(rng: np.random.Generator, n: int, sigma: float = ORDER_SIGMA) -> Users:
    """``n`` users of the A/A population (module doc), order values e^N(3.5, sigma²)."""
    impressions = 1 + rng.poisson(8.0, n)
    clicks = rng.binomial(impressions, rng.beta(2.0, 18.0, n))
    propensity = np.minimum(0.0625 * rng.gamma(0.5, 2.0, n), 1.0)
    orders, revenue = _revenue(rng, rng.random(n) < propensity, sigma)
    _, pre_revenue = _revenue(rng, rng.random(n) < propensity, sigma)
    return Users(impressions, clicks, orders, revenue, pre_revenue)


ARM_STATS: dict[str, Callable[[Users], ArmStats]] = {
    "ctr": lambda u: RatioStats.from_values(u.clicks, u.impressions),
    "conversion": lambda u: ProportionStats.from_values(u.orders > 0),
    "revenue_per_user": lambda u: MeanStats.from_values(u.revenue),
    "revenue_per_user_cuped": lambda u: CupedStats.from_values(u.revenue, u.pre_revenue),
    "aov": lambda u: RatioStats.from_values(u.revenue, u.orders),
}


def _compare(c: ArmStats, t: ArmStats, alpha: float, how: RelativeInterval) -> Comparison:
    return compare(c, t, alpha=alpha, relative_interval=how, nonnegative=True)


def _rejects(lift_p: float | None, alpha: float) -> bool:
    return lift_p is not None and lift_p < alpha


def aa_rates(
    runs: int,
    users_per_arm: int = 800,
    *,
    seed: int = 0,
    alpha: float = 0.05,
    order_sigma: float = ORDER_SIGMA,
) -> Rates:
    """Rejection rates over ``runs`` A/A experiments of ``users_per_arm`` users per arm.

    ``fieller``: the relative interval (Fieller) excludes 0, or it is unbounded
    and the p-value (the absolute one) is below α, which is what a report judges
    by; ``delta``: the delta-method relative interval excludes 0; ``absolute``:
    Welch on the absolute lift; ``unbounded``: share of runs whose Fieller
    interval is unbounded.
    """
    rng = np.random.default_rng(seed)
    counts = {key: dict.fromkeys(METRICS, 0) for key in ("fieller", "delta", "absolute", "unb")}
    for _ in range(runs):
        control = simulate_users(rng, users_per_arm, order_sigma)
        treatment = simulate_users(rng, users_per_arm, order_sigma)
        for name, stats in ARM_STATS.items():
            c, t = stats(control), stats(treatment)
            fieller, delta = _compare(c, t, alpha, "fieller"), _compare(c, t, alpha, "delta")
            ci = fieller.relative.ci
            if ci is None:
                counts["unb"][name] += 1
                counts["fieller"][name] += _rejects(fieller.relative.p_value, alpha)
            else:
                counts["fieller"][name] += ci[0] > 0 or ci[1] < 0
            counts["delta"][name] += _rejects(delta.relative.p_value, alpha)
            counts["absolute"][name] += _rejects(fieller.absolute.p_value, alpha)
    share = {key: {m: v / runs for m, v in by.items()} for key, by in counts.items()}
    return Rates(
        runs=runs,
        alpha=alpha,
        fieller=share["fieller"],
        delta=share["delta"],
        absolute=share["absolute"],
        unbounded=share["unb"],
    )
