"""A skewness-corrected interval for a mean, and the third moment it needs of an
estimator's linearised per-user contribution (docs/metrics.md#ope-intervals).

Hall's (1992) transformation of the studentised mean: with T = (x̄ − μ)/σ̂ and
the sample skewness γ̂ = μ̂₃/σ̂³ of n values,

    g(T) = T + γ̂T²/3 + γ̂²T³/27 + γ̂/(6n) = ((1 + γ̂T/3)³ − 1)/γ̂ + γ̂/(6n),

and √n·g(T) is standard normal to second order (its skewness term removed).
The first three terms are Johnson's (1978) modified t; Hall's cubic term makes
g monotone, so g⁻¹(x) = (3/γ̂)·((1 + γ̂(x − γ̂/(6n)))^{1/3} − 1) is defined for
every x and the 1 − α interval for μ is

    [x̄ − σ̂·g⁻¹(z/√n), x̄ − σ̂·g⁻¹(−z/√n)],  z = Φ⁻¹(1 − α/2).

For right-skewed values (γ̂ > 0) it reaches further above x̄ than below; at
γ̂ = 0 it is the normal interval x̄ ± z·σ̂/√n.

An off-policy estimate f(means) is, to first order, the mean of its per-user
influence values ψ_u = Σ_x ∂f/∂x·(x_u − x̄) (the delta method). Their third
central moment needs Σ_u x_u·y_u·z_u over the estimator's variables: the store
returns those sums named by :func:`triple`.

References: P. Hall (1992), "On the removal of skewness by transformation",
JRSS B 54(1), 221-228; N. J. Johnson (1978), "Modified t tests and confidence
intervals for asymmetrical populations", JASA 73(363), 536-544.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations_with_replacement

from abeval.stats.distributions import norm_isf


def triple(x: str, y: str, z: str) -> str:
    """The name, in a user-sums' ``sums``, of Σ_u x_u·y_u·z_u (in sorted order)."""
    a, b, c = sorted((x, y, z))
    return f"{a}*{b}*{c}"


def triples(variables: Sequence[str]) -> list[tuple[str, str, str]]:
    """Every product of three of ``variables`` (repeats allowed), each once, sorted."""
    return list(combinations_with_replacement(sorted(set(variables)), 3))


#: Below this share of the raw second moment, the central one is taken as lost to
#: rounding: the third moment, computed from raw sums of doubles (relative error
#: about 1e-16 of s₁³), would then carry an error of 1e-16 / LOST^1.5 = 1e-4 in
#: the skewness.
LOST = 1e-8


def influence_moments(
    users: int,
    sums: Mapping[str, float],
    products: Mapping[tuple[str, str], float],
    grad: Mapping[str, float],
) -> tuple[float, float] | None:
    """(second, third) central moments, divisor n, of L_u = Σ_x grad_x·x_u over the
    users, from Σ x_u, Σ x_u·y_u and Σ x_u·y_u·z_u; None when a sum of three
    products is missing, or when the spread of L_u is lost to rounding (its
    central second moment below :data:`LOST` of its raw one: L_u nearly equal,
    so the raw sums cancel and their third moment is noise)."""
    names = [x for x in grad if grad[x] != 0.0]
    n = float(users)

    def pair(x: str, y: str) -> float:
        return products[(x, y)] if (x, y) in products else products[(y, x)]

    s1 = sum(grad[x] * sums[x] for x in names) / n
    s2 = 0.0
    s3 = 0.0
    for x in names:
        for y in names:
            s2 += grad[x] * grad[y] * pair(x, y)
            for z in names:
                key = triple(x, y, z)
                if key not in sums:
                    return None
                s3 += grad[x] * grad[y] * grad[z] * sums[key]
    s2 /= n
    s3 /= n
    m2 = s2 - s1 * s1
    if not m2 > LOST * s2:
        return None
    m3 = s3 - 3.0 * s1 * s2 + 2.0 * s1**3
    return m2, m3


def _inverse(x: float, gamma: float, users: int) -> float:
    """Hall's g⁻¹(x) for skewness ``gamma`` over ``users`` values."""
    shifted = x - gamma / (6.0 * users)
    u = gamma * shifted
    if u == 0.0:
        return shifted
    if u > -1.0:  # 3((1 + u)^{1/3} − 1)/u → 1 as u → 0, computed without cancellation
        return shifted * 3.0 * math.expm1(math.log1p(u) / 3.0) / u
    return 3.0 * (math.cbrt(1.0 + u) - 1.0) / gamma


def hall_interval(
    value: float, se: float, gamma: float, users: int, alpha: float
) -> tuple[float, float]:
    """Hall's (1992) 1 − α interval for a mean ``value`` with standard error ``se``
    (σ̂/√n) over ``users`` values whose skewness is ``gamma``."""
    z = norm_isf(alpha / 2)
    root = math.sqrt(users)
    sigma = se * root
    return (
        value - sigma * _inverse(z / root, gamma, users),
        value - sigma * _inverse(-z / root, gamma, users),
    )
