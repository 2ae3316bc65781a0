"""Group-sequential boundaries from an α-spending function (Lan and DeMets 1983).

An experiment read at looks k = 1..K, at information fractions
0 < t₁ < … < t_K ≤ 1 of a maximum sample size, rejects H0: δ = 0 at look k
when |Z_k| ≥ c_k, with Z_k the (fixed-horizon) z statistic of the data so far.
Under H0 the Z_k are jointly normal with Cov(Z_j, Z_k) = sqrt(t_j / t_k)
(j ≤ k): the partial sums S_k = Z_k·sqrt(t_k) have independent increments
S_k − S_{k−1} ~ N(0, t_k − t_{k−1}). The boundaries spend the error
α(t) of a spending function: c_k solves::

    P(|Z_j| < c_j for j < k, |Z_k| ≥ c_k) = α(t_k) − α(t_{k−1}),

so P(reject at any look) = α(t_K) ≤ α whatever the number and timing of the
looks, provided these do not depend on the data seen (Lan and DeMets 1983,
"Discrete sequential boundaries for clinical trials", Biometrika 70(3)). The
spending function is Lan–DeMets' O'Brien–Fleming type on each side, at the
one-sided level α/2 (as gsDesign's ``sfLDOF`` and DeMets and Lan 1994 tabulate
it), two sides together::

    α(t) = 2·(2 − 2·Φ(z₁₋α/₄ / √t)),        α(1) = α,

which spends almost nothing early and leaves the last look close to the
fixed-horizon test (five equally spaced looks at α = 0.05: c = 4.877, 3.357,
2.680, 2.290, 2.031, against 1.96). Each side gets half: a one-sided error of
α/2 however often the test is read.

The probabilities are computed by numerical integration over the continuation
region, look after look (Armitage, McPherson and Rowe 1969; Jennison and
Turnbull 2000, "Group Sequential Methods with Applications to Clinical
Trials", ch. 19): the sub-density of S_k on the region is carried on a grid and
convolved with the normal increment to the next look.

The repeated confidence interval at look K, effect ± c_K·se, covers the true
effect at every look at once with probability ≥ 1 − α (Jennison and Turnbull
2000, ch. 9). Its p-value is the repeated p-value (ibid., section 9.1): the
smallest α whose boundary at the current look |Z_K| reaches, so that
p ≤ α exactly when the repeated confidence interval at level 1 − α excludes 0
(:func:`repeated_p_value`).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

#: Grid points across the continuation region of each look.
_GRID = 241
#: The boundary of a look that may spend (next to) nothing: no z reaches it.
MAX_BOUNDARY = 40.0
#: Below this error a look's boundary is the unconditional one, −Φ⁻¹(a/2): the
#: grid cannot resolve such a probability, and the unconditional boundary spends
#: at most a (the event "crossed now" is part of "|Z_k| ≥ c").
_TINY = 1e-9


def obf_spending(t: float, alpha: float) -> float:
    """The error (both sides) spent by information fraction ``t``:
    2·(2 − 2Φ(z₁₋α/₄/√t)), t capped at 1."""
    from scipy.special import ndtr, ndtri

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if t <= 0:
        return 0.0
    z = -float(ndtri(alpha / 4))
    return float(4.0 * ndtr(-z / math.sqrt(min(t, 1.0))))


def _check(fractions: tuple[float, ...]) -> None:
    if not fractions:
        raise ValueError("need at least one look")
    if any(not 0 < t <= 1 for t in fractions) or any(
        b <= a for a, b in itertools.pairwise(fractions)
    ):
        raise ValueError(f"information fractions must increase within (0, 1], got {fractions}")


def spending_boundaries(fractions: tuple[float, ...], alpha: float = 0.05) -> tuple[float, ...]:
    """The two-sided boundaries c₁..c_K on |Z| at the looks ``fractions``
    (increasing, in (0, 1]) for :func:`obf_spending` at level ``alpha``
    (module docstring). A look that is given (next to) no error to spend gets
    :data:`MAX_BOUNDARY`."""
    _check(fractions)
    return _boundaries(tuple(float(t) for t in fractions), float(alpha))


@lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    import numpy as np
    from scipy.special import ndtri

    out: list[float] = []
    spent = 0.0
    previous = 0.0
    # the sub-density of S on the continuation region, at grid points with
    # Simpson's weights folded in
    grid = np.zeros(1)
    weights = np.ones(1)
    for t in fractions:
        target = obf_spending(t, alpha) - spent
        spent += target
        sd = math.sqrt(t - previous)
        previous = t

        if len(out) == 0 or target < _TINY:  # the first look: S₁ ~ N(0, t₁)
            c = min(-float(ndtri(target / 2)), MAX_BOUNDARY) if target > 0 else MAX_BOUNDARY
            b = c * math.sqrt(t)
        else:
            b = _solve(grid, weights, sd, target, -float(ndtri(target / 2)) * math.sqrt(t))
            c = b / math.sqrt(t)
        out.append(c)
        new = np.linspace(-b, b, _GRID)
        kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) / sd) ** 2)
        weights = _simpson(new) * (kernel @ weights) / (sd * math.sqrt(2 * math.pi))
        grid = new
    return tuple(out)


def _solve(grid: Any, weights: Any, sd: float, target: float, guess: float) -> float:
    """The b with P(continued so far, |S_k| ≥ b) = ``target``: Newton's method on
    the crossing probability, which falls with b, inside a bracket that each step
    narrows (bisection when a step leaves it). Not scipy.optimize: a report does
    not load it (docs/architecture.md)."""
    import numpy as np
    from scipy.special import ndtr

    def gap(b: float) -> tuple[float, float]:
        low, high = (-b - grid) / sd, (grid - b) / sd
        p = float(np.sum(weights * (ndtr(low) + ndtr(high))))
        dens = np.exp(-0.5 * low * low) + np.exp(-0.5 * high * high)
        slope = -float(np.sum(weights * dens)) / (sd * math.sqrt(2 * math.pi))
        return p - target, slope

    lo, hi = 0.0, float(np.max(np.abs(grid))) + 12.0 * sd
    b = min(max(guess, lo), hi)
    for _ in range(100):
        f, slope = gap(b)
        if f > 0:
            lo = b
        else:
            hi = b
        step = b - f / slope if slope < 0 else math.nan
        # converged: Newton's own step is below the tolerance (at the root, f is
        # rounding noise and the step may fall on the bracket's edge, which must
        # not send the search on by bisection down to a 1e-12 bracket)
        if abs(step - b) <= 1e-12 * max(b, 1.0):
            return step
        if not lo < step < hi:
            step = (lo + hi) / 2
        if abs(step - b) <= 1e-12 * max(b, 1.0) or hi - lo <= 1e-12:
            return step
        b = step
    return b


def _simpson(grid: Any) -> Any:
    """Simpson's weights on an evenly spaced grid of an odd number of points."""
    import numpy as np

    h = (grid[-1] - grid[0]) / (len(grid) - 1)
    w = np.ones(len(grid))
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w * h / 3.0


def spending_critical_value(fractions: tuple[float, ...], alpha: float = 0.05) -> float:
    """The multiple of the standard error the repeated confidence interval spans at
    the last of the looks ``fractions``: c_K of :func:`spending_boundaries`."""
    return spending_boundaries(fractions, alpha)[-1]


#: The repeated p-value's search range over α: below it the p-value is reported
#: as this floor (no boundary tells such errors apart: :data:`MAX_BOUNDARY`).
P_FLOOR = 1e-15
_P_CEILING = 1.0 - 1e-12


def repeated_p_value(z: float, fractions: tuple[float, ...]) -> float:
    """The repeated p-value of a z statistic at the last of the looks ``fractions``
    (module docstring): the α with c_K(α) = |z|, found by Ridders' method on
    log α (c_K falls as α grows); 1 when |z| is below the boundary
    of every α < 1, :data:`P_FLOOR` when above the boundary of that α."""
    _check(fractions)
    if not math.isfinite(z):
        raise ValueError(f"z must be finite, got {z}")
    return _repeated_p(abs(float(z)), tuple(float(t) for t in fractions))


@lru_cache(maxsize=256)
def _repeated_p(target: float, looks: tuple[float, ...]) -> float:

    def gap(u: float) -> float:
        return _boundaries.__wrapped__(looks, math.exp(u))[-1] - target

    lo, hi = math.log(P_FLOOR), math.log(_P_CEILING)
    # the bracket's ends are the same for every z at these looks: their boundaries
    # are cached (those of the search's own steps are not, to keep the cache small)
    f_lo = _boundaries(looks, math.exp(lo))[-1] - target
    f_hi = _boundaries(looks, math.exp(hi))[-1] - target
    if f_hi >= 0:
        return 1.0
    if f_lo <= 0:
        return P_FLOOR
    # Ridders' method: the bracket [lo, hi] keeps gap(lo) > 0 ≥ gap(hi)
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        f_mid = gap(mid)
        root = math.sqrt(f_mid * f_mid - f_lo * f_hi)
        x = mid + (mid - lo) * f_mid / root  # gap falls: f_lo − f_hi > 0
        f_x = gap(x)
        points = sorted([(lo, f_lo), (mid, f_mid), (x, f_x), (hi, f_hi)])
        # the tightest neighbours across the sign change
        for (a, f_a), (b, f_b) in itertools.pairwise(points):
            if f_a > 0 >= f_b:
                lo, f_lo, hi, f_hi = a, f_a, b, f_b
                break
        if -f_hi <= 1e-11:
            break
        if f_lo <= 1e-11:
            return math.exp(lo)
    return math.exp(hi)


def information_fractions(users: tuple[int, ...], maximum: float) -> tuple[float, ...]:
    """The information fractions of looks after ``users`` (cumulative, both arms),
    against a maximum sample size: n_k / max(maximum, n_K), repeats dropped (a day
    without new users is no new look)."""
    if not users or users[-1] <= 0:
        raise ValueError("need users at the last look")
    top = max(float(maximum), float(users[-1]))
    out: list[float] = []
    for n in users:
        t = n / top
        if t > 0 and (not out or t > out[-1]):
            out.append(t)
    return tuple(out)
