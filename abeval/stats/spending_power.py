"""Power of the group-sequential test that spends its error over daily looks
(:mod:`abeval.stats.spending`): the chance of crossing a boundary by the last look.

Looks k = 1..K at information fractions t₁ < … < t_K = 1 of a maximum size N.
With a true effect whose fixed-horizon z statistic at N has mean λ (the
noncentrality, Δ/se(N)), the partial sums S_k = Z_k·√t_k have independent
increments S_k − S_{k−1} ~ N(λ·(t_k − t_{k−1}), t_k − t_{k−1}). The test stops
at the first look with |Z_k| ≥ c_k (the spending boundaries at level α), so::

    P(cross by look K) = 1 − P(|S_k| < c_k·√t_k for every k),

computed as the boundaries are: the sub-density of S_k on the continuation
region carried on a grid and convolved with the (shifted) normal increment to
the next look (Jennison and Turnbull 2000, ch. 19). With one look it is the
fixed-horizon power Φ(λ − z₁₋α/₂) + Φ(−λ − z₁₋α/₂); with more looks the last
boundary is above z₁₋α/₂ and the same N has less power: the users a spending
test needs for a given power are the fixed test's times (λ_K / λ₁)², the
"inflation factor" of a group-sequential design (Jennison and Turnbull 2000,
ch. 2; about 1.03 for O'Brien–Fleming-type spending over 14 daily looks).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from abeval.stats.spending import spending_boundaries

#: Grid points across the continuation region of each look (as
#: :mod:`abeval.stats.spending`).
_GRID = 241
#: The looks counted when the traffic is unknown: two weeks of daily looks.
DEFAULT_LOOKS = 14
#: The most daily looks counted: beyond eight weeks the last boundary of
#: O'Brien–Fleming-type spending moves by under 0.5% (docs/metrics.md#power-and-mde).
MAX_LOOKS = 56


def planned_looks(users: float, users_per_day: float | None) -> int:
    """The daily looks up to ``users`` at ``users_per_day`` (the days that take,
    rounded up), :data:`DEFAULT_LOOKS` without traffic, at most :data:`MAX_LOOKS`."""
    if not users_per_day or not math.isfinite(users / users_per_day):
        return DEFAULT_LOOKS
    return max(1, min(MAX_LOOKS, math.ceil(users / users_per_day)))


def daily_fractions(looks: int) -> tuple[float, ...]:
    """The information fractions of ``looks`` equally spaced looks ending at the
    maximum size: 1/K, 2/K, …, 1 (daily looks at constant traffic)."""
    if looks < 1:
        raise ValueError(f"need at least one look, got {looks}")
    return tuple((k + 1) / looks for k in range(looks))


def crossing_probabilities(
    fractions: tuple[float, ...], noncentrality: float, alpha: float = 0.05
) -> tuple[float, float]:
    """(P(crossing the upper boundary first), P(crossing the lower boundary first))
    by the last of the looks ``fractions`` for a true noncentrality ``noncentrality``
    at t = 1 (module docstring); the two-sided boundaries at level ``alpha``."""
    if not math.isfinite(noncentrality):
        raise ValueError(f"the noncentrality must be finite, got {noncentrality}")
    bounds = spending_boundaries(fractions, alpha)
    return _crossing(tuple(float(t) for t in fractions), bounds, float(noncentrality))


@lru_cache(maxsize=1024)
def _crossing(
    fractions: tuple[float, ...], bounds: tuple[float, ...], drift: float
) -> tuple[float, float]:
    import numpy as np
    from scipy.special import ndtr

    from abeval.stats.spending import _simpson

    upper = lower = 0.0
    previous = 0.0
    grid = np.zeros(1)
    weights = np.ones(1)  # the sub-density on ``grid`` times Simpson's weights
    for t, c in zip(fractions, bounds, strict=True):
        step = t - previous
        sd, shift = math.sqrt(step), drift * step
        previous = t
        b = c * math.sqrt(t)
        upper += float(np.sum(weights * ndtr((grid + shift - b) / sd)))
        lower += float(np.sum(weights * ndtr((-b - grid - shift) / sd)))
        new = np.linspace(-b, b, _GRID)
        kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :] - shift) / sd) ** 2)
        weights = _simpson(new) * (kernel @ weights) / (sd * math.sqrt(2 * math.pi))
        grid = new
    return min(max(upper, 0.0), 1.0), min(max(lower, 0.0), 1.0)


def spending_power(fractions: tuple[float, ...], noncentrality: float, alpha: float) -> float:
    """The chance of crossing either boundary by the last look (both tails
    counted, as :func:`abeval.stats.power.power_of_test` does): the upper crossing
    of :func:`upper_crossings` and the lower one, its mirror (−λ)."""
    both = upper_crossings(fractions, [noncentrality, -noncentrality], alpha)
    return min(float(both[0] + both[1]), 1.0)


def spending_noncentrality(fractions: tuple[float, ...], power: float, alpha: float) -> float:
    """The noncentrality at t = 1 for which the spending test crosses by the last
    look with probability ``power``: bisection between the fixed test's λ (whose
    power over these looks is at most ``power``) and a bracket doubled until it
    reaches it."""
    from abeval.stats.distributions import norm_isf
    from abeval.stats.power import _noncentrality

    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    lo = _noncentrality(float(norm_isf(alpha / 2)), power)
    if spending_power(fractions, lo, alpha) >= power:
        return lo
    hi = lo * 1.25 + 0.5
    while spending_power(fractions, hi, alpha) < power:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-7 * hi:
        mid = 0.5 * (lo + hi)
        if spending_power(fractions, mid, alpha) < power:
            lo = mid
        else:
            hi = mid
    return hi


def upper_crossings(fractions: tuple[float, ...], noncentralities: Any, alpha: float = 0.05) -> Any:
    """P(crossing the upper boundary first) by the last look, for each of an array
    of noncentralities at once. One recursion under the null gives every drift by a
    change of measure: under drift λ the sub-density of S_{k−1} on the continuation
    region is the null one times exp(λ·s − λ²·t_{k−1}/2), and the chance of then
    crossing upward at look k is, in closed form,
    Σ_j w_j·exp(λ·g_j − λ²·t_{k−1}/2)·Φ((g_j + λ·Δ_k − b_k)/√Δ_k) over the null
    grid g and weights w (tests compare it with :func:`crossing_probabilities`)."""
    import numpy as np
    from scipy.special import ndtr

    lam = np.asarray(noncentralities, dtype=float)
    bounds = spending_boundaries(fractions, alpha)
    total = np.zeros_like(lam)
    for grid, weights, before, step, b in _null_states(tuple(float(t) for t in fractions), bounds):
        tilt = np.exp(np.outer(lam, grid) - 0.5 * (lam * lam * before)[:, None])
        cross = ndtr((grid[None, :] + lam[:, None] * step - b) / math.sqrt(step))
        total += (tilt * cross) @ weights
    return np.clip(total, 0.0, 1.0)


@lru_cache(maxsize=128)
def _null_states(fractions: tuple[float, ...], bounds: tuple[float, ...]) -> tuple[Any, ...]:
    """Per look k: (grid and weights of S_{k−1} on the continuation region under the
    null, t_{k−1}, t_k − t_{k−1}, the boundary b_k = c_k·√t_k on S_k)."""
    import numpy as np

    from abeval.stats.spending import _simpson

    out = []
    previous = 0.0
    grid = np.zeros(1)
    weights = np.ones(1)
    for t, c in zip(fractions, bounds, strict=True):
        step = t - previous
        sd = math.sqrt(step)
        b = c * math.sqrt(t)
        out.append((grid, weights, previous, step, b))
        new = np.linspace(-b, b, _GRID)
        kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) / sd) ** 2)
        weights = _simpson(new) * (kernel @ weights) / (sd * math.sqrt(2 * math.pi))
        grid = new
        previous = t
    return tuple(out)
