"""Assurance: the power of a test averaged over a forecast of its true lift
(docs/metrics.md#assurance), and the users a test needs to reach a given one.

A test of N users (two equal arms) measures the relative lift with standard
error se(N) = c / √N, where c (the lift's standard error times √users) comes
from past tests of the same metric. It shows a significant improvement when
its estimate exceeds z₁₋α/₂ · se; for a true lift θ that happens with
probability Φ(θ / se − z). Averaged over a normal forecast N(m, sd²) this is
Φ((m − z·se) / √(se² + sd²)), and over the forecast's mixture the weighted sum.
As N grows it tends to P(θ > 0): no test reaches an assurance above that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

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


def assurance(forecast: Forecast, users: float, scale: float, alpha: float = 0.05) -> float:
    """P(a test of ``users`` shows a significant improvement), averaged over
    ``forecast``; ``scale`` is c, the lift's standard error times √users."""
    se = scale / math.sqrt(users)
    z = norm_isf(alpha / 2)
    return sum(
        w * norm_cdf((m - z * se) / math.sqrt(se * se + sd * sd))
        for w, m, sd in zip(forecast.weights, forecast.means, forecast.sds, strict=True)
    )


def users_for_assurance(
    forecast: Forecast, scale: float, target: float = 0.8, alpha: float = 0.05
) -> Assurance:
    """The fewest users whose test reaches ``target`` assurance (bisection on log N)."""
    if forecast.status != "ok" or not forecast.weights:
        return Assurance("no_forecast", forecast.message or "no forecast", target, alpha)
    if not (math.isfinite(scale) and scale > 0):
        return Assurance(
            "invalid_input", "the lift's standard error must be above 0", target, alpha
        )
    ceiling = forecast.p_positive
    if assurance(forecast, MAX_USERS, scale, alpha) < target:
        return Assurance(
            "unreachable",
            f"no test reaches {target:.0%} assurance: P(lift > 0) is {ceiling:.0%}",
            target, alpha, None, ceiling,
        )  # fmt: skip
    lo, hi = 0.0, math.log(MAX_USERS)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if assurance(forecast, math.exp(mid), scale, alpha) < target:
            lo = mid
        else:
            hi = mid
    users = math.ceil(math.exp(hi))
    users += users % 2  # two equal arms
    return Assurance("ok", "", target, alpha, users, ceiling)
