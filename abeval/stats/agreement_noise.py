"""How much of the online lifts' spread is noise, and what a board can reach given
it (docs/metrics.md#noise-aware-board).

The online lifts yᵢ of a signal's points carry standard errors sᵢ. With the
between-experiment variance estimated by T² = max(var(y) − mean(s²), 0) (var
with k − 1 in the denominator):

- :func:`reliability`: R = max(0, 1 − mean(s²) / var(y)), the share of var(y)
  that is true differences between experiments;
- :func:`noise_ceiling`: the Spearman correlation a *perfect* offline predictor
  (one that knows each true lift θᵢ) would be expected to reach against these
  noisy lifts, by simulation with a fixed seed: θᵢ ~ N(ȳ, T²),
  y*ᵢ = θᵢ + N(0, sᵢ²), the mean over draws of Spearman(θ, y*); a board's ρ is
  then read as ρ / ceiling;
- :func:`expected_precision`: decision quality against the latent truth,
  Σ saysᵢ·P(θᵢ > 0 | yᵢ) / Σ saysᵢ, with P under the normal–normal model
  θᵢ ~ N(ȳ, T²), yᵢ | θᵢ ~ N(θᵢ, sᵢ²).

Degenerate inputs give a ``status``, never an exception. numpy is imported
inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.stats.agreement import DEFAULT_SEED
from abeval.stats.agreement import MIN_EXPERIMENTS as MIN_POINTS
from abeval.stats.distributions import norm_cdf
from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    import numpy as np

CeilingStatus = Literal["ok", "too_few_points", "no_signal_variance", "ceiling_too_small"]

#: Below this ceiling ρ / ceiling is not given: the ratio would be unbounded.
MIN_CEILING = 0.2
#: Simulated histories behind a ceiling.
DEFAULT_DRAWS = 2000


@dataclass(frozen=True)
class NoiseCeiling(JsonResult):
    """The online lifts' reliability and the noise ceiling of Spearman's ρ.

    ``signal_variance`` is T²; ``ceiling`` is None only with too few points;
    ``status`` ``ceiling_too_small`` (below :data:`MIN_CEILING`) or
    ``no_signal_variance`` (T² = 0, ceiling 0) means ρ is not divided by it."""

    points: int
    reliability: float | None
    signal_variance: float | None
    ceiling: float | None
    draws: int
    seed: int
    status: CeilingStatus
    message: str


@dataclass(frozen=True)
class ExpectedPrecision(JsonResult):
    """Of the ``says`` points where the offline interval lies above 0, the
    expected number (``expected_true_positives``) and share
    (``expected_precision``) whose true online lift is above 0, under the
    normal–normal model with prior N(``prior_mean``, ``prior_variance``)."""

    says: int
    expected_true_positives: float | None
    expected_precision: float | None
    prior_mean: float | None
    prior_variance: float | None


def _usable(y: Sequence[float], s: Sequence[float | None]) -> tuple[list[float], list[float]]:
    pairs = [(a, b) for a, b in zip(y, s, strict=True) if b is not None and math.isfinite(b)]
    return [a for a, _ in pairs], [float(b) for _, b in pairs]


def signal_variance(y: Sequence[float], s: Sequence[float]) -> float:
    """T² = max(var(y) − mean(s²), 0), var with k − 1 in the denominator."""
    import numpy as np

    return max(float(np.var(y, ddof=1)) - float(np.mean(np.square(s))), 0.0)


def reliability(y: Sequence[float], s: Sequence[float]) -> float:
    """R = max(0, 1 − mean(s²) / var(y)); 0 when the lifts do not vary."""
    import numpy as np

    var = float(np.var(y, ddof=1))
    if var <= 0:
        return 0.0
    return max(0.0, 1.0 - float(np.mean(np.square(s))) / var)


def rank_rows(a: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) along the last axis of a 2-D array, ties sharing
    the mean rank."""
    import numpy as np

    v = np.asarray(a, dtype=float)
    less = (v[:, None, :] < v[:, :, None]).sum(axis=2)
    equal = (v[:, None, :] == v[:, :, None]).sum(axis=2)
    return less + (equal + 1) / 2.0


def row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``a`` with the same row of ``b``; NaN where a
    row does not vary."""
    import numpy as np

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    sxx = (dx * dx).sum(axis=-1)
    syy = (dy * dy).sum(axis=-1)
    ok = (sxx > 0) & (syy > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, (dx * dy).sum(axis=-1) / np.sqrt(np.where(ok, sxx * syy, 1.0)), np.nan)


def noise_ceiling(
    y: Sequence[float],
    s: Sequence[float | None],
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
) -> NoiseCeiling:
    """Reliability and noise ceiling of the lifts ``y`` with standard errors ``s``
    (module docstring); points without a standard error are left out. The draws
    are ``numpy.random.default_rng(seed)``: first θ (draws × k) by
    ``normal(ȳ, T, …)``, then the noise by ``normal(0, s, …)``."""
    import numpy as np

    ys, ss = _usable(y, s)
    k = len(ys)
    if k < MIN_POINTS:
        return NoiseCeiling(
            k, None, None, None, draws, seed, "too_few_points",
            f"{k} online lifts with a standard error: the ceiling needs {MIN_POINTS} or more",
        )  # fmt: skip
    r = reliability(ys, ss)
    t2 = signal_variance(ys, ss)
    if t2 <= 0:
        return NoiseCeiling(
            k, r, 0.0, 0.0, draws, seed, "no_signal_variance",
            "the online lifts vary no more than their noise: even a perfect predictor would "
            "rank them at random",
        )  # fmt: skip
    rng = np.random.default_rng(seed)
    theta = rng.normal(float(np.mean(ys)), math.sqrt(t2), size=(draws, k))
    noisy = theta + rng.normal(0.0, np.asarray(ss), size=(draws, k))
    rho = row_pearson(rank_rows(theta), rank_rows(noisy))
    ceiling = float(np.nanmean(rho))
    if ceiling < MIN_CEILING:
        return NoiseCeiling(
            k, r, t2, ceiling, draws, seed, "ceiling_too_small",
            f"a perfect predictor would reach Spearman {ceiling:.2f} on average: too little "
            "to divide by",
        )  # fmt: skip
    return NoiseCeiling(k, r, t2, ceiling, draws, seed, "ok", "")


def rho_over_ceiling(rho: float | None, c: NoiseCeiling) -> float | None:
    """ρ / ceiling, None unless the ceiling's status is ``ok``."""
    if rho is None or c.status != "ok" or c.ceiling is None:
        return None
    return rho / c.ceiling


def p_positive(y: float, s: float, prior_mean: float, prior_variance: float) -> float:
    """P(θ > 0 | y) for θ ~ N(prior_mean, prior_variance), y | θ ~ N(θ, s²)."""
    if prior_variance <= 0:
        return 1.0 if prior_mean > 0 else 0.0 if prior_mean < 0 else 0.5
    if s <= 0:
        return 1.0 if y > 0 else 0.0 if y < 0 else 0.5
    shrink = prior_variance / (prior_variance + s * s)
    mean = prior_mean + shrink * (y - prior_mean)
    return norm_cdf(mean / math.sqrt(shrink * s * s))


def expected_precision(
    y: Sequence[float], s: Sequence[float | None], says: Sequence[bool]
) -> ExpectedPrecision:
    """Σ saysᵢ·P(θᵢ > 0 | yᵢ) / Σ saysᵢ over the points with a standard error;
    the prior is N(ȳ, T²) of those points (module docstring)."""
    import numpy as np

    kept = [(a, b, c) for a, b, c in zip(y, s, says, strict=True) if b is not None]
    said = sum(1 for _, _, c in kept if c)
    if len(kept) < MIN_POINTS or said == 0:
        return ExpectedPrecision(said, None, None, None, None)
    ys = [a for a, _, _ in kept]
    ss = [float(b) for _, b, _ in kept]
    mean = float(np.mean(ys))
    t2 = signal_variance(ys, ss)
    tp = sum(p_positive(a, float(b), mean, t2) for a, b, c in kept if c)
    return ExpectedPrecision(said, tp, tp / said, mean, t2)
