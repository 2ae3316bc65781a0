"""The true effects a simulation promises, in closed form: the Plackett–Luce
ranking maths (:func:`relevant_at_position`), the relevance weight that gives an
arm its configured CTR lift, and the per-arm truth (:class:`ArmTruth`,
:class:`ExpectedEffects`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from abeval.simulate.config import SimulationConfig


def relevant_at_position(list_length: int, weight: float) -> np.ndarray:
    """``q[R, k]``: probability that position ``k + 1`` holds a relevant item, when
    ``R`` of ``list_length`` candidates are relevant and a Plackett–Luce policy
    gives relevant items ``weight`` and the others 1. Exact (dynamic programming
    over how many relevant items the first draws took)."""
    n = list_length
    r = np.arange(n + 1, dtype=np.float64)[:, None]
    h = np.arange(n + 1, dtype=np.float64)[None, :]
    state = np.zeros((n + 1, n + 1))  # state[R, h]: P(h relevant among the first j draws)
    state[:, 0] = 1.0
    q = np.zeros((n + 1, n))
    for j in range(n):
        rel_left = np.clip(r - h, 0.0, None)
        irr_left = np.clip((n - r) - (j - h), 0.0, None)
        denom = rel_left * weight + irr_left
        p_rel = np.divide(rel_left * weight, denom, out=np.zeros_like(denom), where=denom > 0)
        took_rel = state * p_rel
        q[:, j] = took_rel.sum(axis=1)
        new = state - took_rel
        new[:, 1:] += took_rel[:, :-1]
        state = new
    return q


def irrelevant_at_position(list_length: int, weight: float) -> np.ndarray:
    """``t[R, k, m]``: probability that position ``k + 1`` holds the ``m + 1``-th
    irrelevant item drawn, with ``R`` of ``list_length`` candidates relevant and
    the Plackett–Luce policy of :func:`relevant_at_position`. Summed over ``m``
    it is ``1 - q[R, k]``. Exact (the same dynamic programme: with ``h`` relevant
    among the first ``k`` draws, an irrelevant draw at ``k`` is the ``k - h + 1``-th)."""
    n = list_length
    r = np.arange(n + 1, dtype=np.float64)[:, None]
    h = np.arange(n + 1, dtype=np.float64)[None, :]
    state = np.zeros((n + 1, n + 1))
    state[:, 0] = 1.0
    t = np.zeros((n + 1, n, n))
    for j in range(n):
        rel_left = np.clip(r - h, 0.0, None)
        irr_left = np.clip((n - r) - (j - h), 0.0, None)
        denom = rel_left * weight + irr_left
        p_rel = np.divide(rel_left * weight, denom, out=np.zeros_like(denom), where=denom > 0)
        p_irr = np.divide(irr_left, denom, out=np.zeros_like(denom), where=denom > 0)
        took_irr = state * p_irr  # [R, h]: the draw is irrelevant, the (j - h + 1)-th
        for hh in range(j + 1):
            t[:, j, j - hh] += took_irr[:, hh]
        took_rel = state * p_rel
        new = state - took_rel
        new[:, 1:] += took_rel[:, :-1]
        state = new
    return t


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """``P(R = r)`` for ``r = 0..n``, ``R ~ Binomial(n, p)``."""
    return np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])


def _attractiveness_by_position(config: SimulationConfig, weight: float) -> np.ndarray:
    """``E_w[a_k]`` for each shown position."""
    q = relevant_at_position(config.pool, weight)[:, : config.list_length]
    pmf = binomial_pmf(config.pool, config.relevant_share)
    a0 = config.irrelevant_attractiveness
    return np.asarray(pmf @ (q + (1.0 - q) * a0))


def click_weight(config: SimulationConfig, weight: float) -> float:
    """Mean over positions of ``e_k · E_w[a_k]``: the CTR divided by ``E[θ]``."""
    return float(np.mean(config.examination * _attractiveness_by_position(config, weight)))


def solve_weight(config: SimulationConfig, lift: float, arm: str) -> float:
    """The Plackett–Luce relevance weight whose CTR is ``(1 + lift)`` times the control's."""
    w_c = config.control_relevance_weight
    if lift == 0:
        return w_c
    target = (1.0 + lift) * click_weight(config, w_c)
    lo, hi = -30.0, 30.0  # log-weights: relevant items (almost) always last / first
    g_lo, g_hi = click_weight(config, math.exp(lo)), click_weight(config, math.exp(hi))
    if not g_lo <= target <= g_hi:
        base = click_weight(config, w_c)
        raise ValueError(
            f"true_ctr_lift {lift:+.4g} for arm {arm!r} is not reachable by re-ranking: "
            f"with these settings the lift must lie in [{g_lo / base - 1:+.4g}, "
            f"{g_hi / base - 1:+.4g}] (a lower irrelevant_attractiveness or "
            "control_relevance_weight widens it)"
        )
    # Illinois (regula falsi) on f(x) = g(e^x) - target, which increases in x
    f_lo, f_hi = g_lo - target, g_hi - target
    x = lo
    side = 0
    for _ in range(200):
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        f_x = click_weight(config, math.exp(x)) - target
        if abs(f_x) <= 1e-15 * target or hi - lo < 1e-12:
            break
        if f_x < 0:
            lo, f_lo = x, f_x
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, f_x
            if side == 1:
                f_lo /= 2
            side = 1
    return math.exp(x)


@dataclass(frozen=True)
class ArmTruth:
    """Expected values for one arm in the experiment window (post-exposure)."""

    arm: str
    share: float
    relevance_weight: float  # Plackett–Luce weight of relevant items in this arm's ranking
    ctr: float  # clicks per impression
    purchase_rate: float  # purchases per click
    purchases_per_impression: float
    mean_order_value: float
    revenue_per_impression: float
    requests_per_user: float
    impressions_per_user: float
    clicks_per_user: float
    purchases_per_user: float
    revenue_per_user: float


@dataclass(frozen=True)
class ExpectedEffects:
    """The truth behind a simulation; ``pre_period`` holds the (control) truth of
    every arm before exposure."""

    control: str
    arms: Mapping[str, ArmTruth]
    pre_period: ArmTruth
    user_propensity_mean: float  # E[θ]

    def value(self, metric: str, arm: str) -> float:
        return float(getattr(self.arms[arm], metric))

    def relative_lift(self, metric: str, arm: str) -> float:
        """``(μ_arm - μ_control) / μ_control`` for an :class:`ArmTruth` field."""
        base = self.value(metric, self.control)
        return self.value(metric, arm) / base - 1.0 if base else 0.0
