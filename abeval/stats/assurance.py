"""Assurance: the power of a test averaged over a forecast of its true lift
(docs/metrics.md#assurance), and the users a test needs to reach a given one.

A test of N users (two equal arms) measures the relative lift with standard
error se(N) = c / √N, where c (the lift's standard error times √users) comes
from past tests of the same metric. It shows a significant improvement when
its estimate exceeds z₁₋α/₂ · se; for a true lift θ that happens with
probability Φ(θ / se − z). Averaged over a normal forecast N(m, sd²) this is
Φ((m − z·se) / √(se² + sd²)), and over the forecast's mixture the weighted sum.
As N grows it tends to P(θ > 0): no test reaches an assurance above that.

**Under daily looks** (``looks`` > 1: the decision's default basis, α spent over a
look a day, :mod:`abeval.stats.spending`) a test shows the improvement when its z
statistic first crosses the upper spending boundary, with probability g(λ) for a
true noncentrality λ = θ/se (:func:`abeval.stats.spending_power.upper_crossings`).
Over a normal forecast λ ~ N(m/se, sd²/se²) and, g rising from 0 to 1, the
average is the Stieltjes sum E g(Λ) = ∫ P(Λ > λ) dg(λ), taken over a fine grid of
λ with P(Λ > λ) exact: right however narrow or wide the forecast. With one look
it is the fixed test's Φ((m − z·se)/√(se² + sd²)) (the tests compare the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from abeval.stats.distributions import norm_cdf, norm_isf
from abeval.stats.forecast import Forecast
from abeval.stats.results import JsonResult

AssuranceStatus = Literal["ok", "unreachable", "no_forecast", "invalid_input"]

#: Above this many users the search gives up (as abeval.stats.power does).
MAX_USERS = 1e13


@dataclass(frozen=True)
class Assurance(JsonResult):
    """The users (both arms together) a test needs for ``target`` assurance at
    level ``alpha``; ``ceiling`` is P(θ > 0), the assurance of an infinite test."""

    status: AssuranceStatus
    message: str
    target: float
    alpha: float
    users: int | None = None
    ceiling: float | None = None
    #: The daily looks the test is read at (1: one fixed-horizon look).
    looks: int = 1


def assurance(
    forecast: Forecast, users: float, scale: float, alpha: float = 0.05, looks: int = 1
) -> float:
    """P(a test of ``users`` shows a significant improvement), averaged over
    ``forecast``; ``scale`` is c, the lift's standard error times √users; read at
    ``looks`` equally spaced looks spending α (one: the fixed-horizon test)."""
    se = scale / math.sqrt(users)
    parts = zip(forecast.weights, forecast.means, forecast.sds, strict=True)
    if looks <= 1:
        z = norm_isf(alpha / 2)
        return sum(w * norm_cdf((m - z * se) / math.sqrt(se * se + sd * sd)) for w, m, sd in parts)
    lam, rise = _crossing_steps(looks, alpha)
    return sum(w * _averaged(lam, rise, m / se, sd / se) for w, m, sd in parts)


#: The noncentralities the upper crossing is tabulated at: below the first it is
#: under 1e-9, above the last within 1e-9 of 1.
_LOW, _HIGH, _STEPS = -8.0, 16.0, 1201


@lru_cache(maxsize=64)
def _crossing_steps(looks: int, alpha: float) -> tuple[Any, Any]:
    """The midpoints of a grid of noncentralities and the rise of the upper crossing
    probability over each step (its value at the low end folded into the first)."""
    import numpy as np

    from abeval.stats.spending_power import daily_fractions, upper_crossings

    grid = np.linspace(_LOW, _HIGH, _STEPS)
    g = upper_crossings(daily_fractions(looks), grid, alpha)
    g = np.maximum.accumulate(g)  # rising, whatever the last digits do
    rise = np.diff(g)
    rise[0] += g[0]
    return (grid[1:] + grid[:-1]) / 2, rise


def _averaged(lam: Any, rise: Any, centre: float, spread: float) -> float:
    """E g(Λ) for Λ ~ N(centre, spread²): Σ P(Λ > λ_i)·Δg_i (module docstring)."""
    import numpy as np
    from scipy.special import ndtr

    above = ndtr((centre - lam) / spread) if spread > 0 else (lam < centre).astype(float)
    return float(np.sum(above * rise))


def users_for_assurance(
    forecast: Forecast,
    scale: float,
    target: float = 0.8,
    alpha: float = 0.05,
    *,
    spending: bool = False,
    users_per_day: float | None = None,
) -> Assurance:
    """The fewest users whose test reaches ``target`` assurance (bisection on log N);
    with ``spending``, read once a day up to them (the days the users take at
    ``users_per_day``: :func:`abeval.stats.spending_power.planned_looks`)."""
    from abeval.stats.spending_power import planned_looks

    def looks(n: float) -> int:
        return planned_looks(n, users_per_day) if spending else 1

    def reached(n: float) -> float:
        return assurance(forecast, n, scale, alpha, looks(n))

    if forecast.status != "ok" or not forecast.weights:
        return Assurance("no_forecast", forecast.message or "no forecast", target, alpha)
    if not (math.isfinite(scale) and scale > 0):
        return Assurance(
            "invalid_input", "the lift's standard error must be above 0", target, alpha
        )
    ceiling = forecast.p_positive
    if reached(MAX_USERS) < target:
        return Assurance(
            "unreachable",
            f"no test reaches {target:.0%} assurance: P(lift > 0) is {ceiling:.0%}",
            target, alpha, None, ceiling, looks(MAX_USERS),
        )  # fmt: skip
    lo, hi = 0.0, math.log(MAX_USERS)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if reached(math.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    users = math.ceil(math.exp(hi))
    users += users % 2  # two equal arms
    return Assurance("ok", "", target, alpha, users, ceiling, looks(users))
