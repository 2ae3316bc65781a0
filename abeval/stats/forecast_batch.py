"""The forecast model's maths on many histories at once (numpy arrays whose
first axis is the history): :mod:`abeval.stats.forecast` calls it with one
history, ``benchmarks/bench_forecast.py`` with thousands.

Model and method: docs/metrics.md#forecasting-the-online-lift. In short,

- regression calibration of the offline lifts: S² = max(var(x) − mean(σ²),
  a floor), λᵢ = S² / (S² + σᵢ²), x̂ᵢ = x̄ + λᵢ (xᵢ − x̄);
- for each τ of a grid, weighted least squares of y on (1, x̂) with weights
  1 / (sᵢ² + τ² + β̃² λᵢ σᵢ²) (β̃ a first pass's slope: the calibrated
  lift's own error, so that τ² holds only what differs between experiments),
  its covariance (XᵀWX)⁻¹ and the restricted (REML) log-likelihood of τ;
- the Q-profile confidence distribution of τ on the grid, and the forecast
  of θ₀ as the mixture over τ of normals; with few experiments
  (:data:`abeval.stats.forecast.SMALL_K`) the REML plug-in with the
  Knapp–Hartung scale and t(k − p) instead (:func:`plugin_t`);
- the slope's interval: Hartung–Knapp–Sidik–Jonkman at the REML τ̂², t(k − 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

#: Points of the τ grid (0 and a geometric sequence up to ``GRID_TOP`` × scale).
GRID_POINTS = 64
GRID_BOTTOM = 1e-2
GRID_TOP = 30.0
#: The floor of the offline lifts' true variance S², as a share of var(x).
RELIABILITY_FLOOR = 0.05


@dataclass(frozen=True)
class Calibrated:
    """Regression calibration of each history's offline lifts: x̂ (R, k), the
    mean x̄ (R,), the true variance S² (R,), and whether S² hit its floor."""

    xhat: np.ndarray
    xbar: np.ndarray
    s2: np.ndarray
    floored: np.ndarray


def calibrate(x: np.ndarray, sx: np.ndarray) -> Calibrated:
    """x̂ = x̄ + λ (x − x̄), λ = S² / (S² + σ²), S² = var(x) − mean(σ²) floored."""
    xbar = x.mean(axis=1)
    var = x.var(axis=1, ddof=1)
    raw = var - np.mean(sx**2, axis=1)
    floor = RELIABILITY_FLOOR * var
    s2 = np.maximum(raw, floor)
    lam = s2[:, None] / (s2[:, None] + sx**2)
    return Calibrated(xbar[:, None] + lam * (x - xbar[:, None]), xbar, s2, raw <= floor)


def shrink(cal: Calibrated, x0: np.ndarray, sx0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A new offline lift's calibrated value x̂₀ and its remaining variance λ₀σ₀²."""
    lam0 = cal.s2 / (cal.s2 + sx0**2)
    return cal.xbar + lam0 * (x0 - cal.xbar), lam0 * sx0**2


@dataclass(frozen=True)
class GridFit:
    """Weighted least squares at every τ of the grid: arrays (R, G)."""

    tau: np.ndarray  # (R, G)
    alpha: np.ndarray
    beta: np.ndarray
    c00: np.ndarray  # (XᵀWX)⁻¹ entries
    c01: np.ndarray
    c11: np.ndarray
    q: np.ndarray  # Σ w (y − α − β x̂)²
    loglik: np.ndarray  # restricted log-likelihood of τ


def tau_grid(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The τ grid of each history (R, G): 0, then geometric from ``GRID_BOTTOM``
    to ``GRID_TOP`` times max(sd(y), median(s))."""
    scale = np.maximum(y.std(axis=1, ddof=1), np.median(s, axis=1))
    steps = np.concatenate([[0.0], np.geomspace(GRID_BOTTOM, GRID_TOP, GRID_POINTS - 1)])
    return scale[:, None] * steps[None, :]


def wls_on_grid(
    xhat: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    tau: np.ndarray,
    extra: np.ndarray | None = None,
) -> GridFit:
    """WLS of y on (1, x̂) with weights 1 / (s² + τ² + ``extra``) for every τ of
    ``tau`` (R, G); ``extra`` (R, k), each experiment's known variance besides
    its test's (default 0)."""
    v = s[:, None, :] ** 2 + tau[:, :, None] ** 2  # (R, G, k)
    if extra is not None:
        v = v + extra[:, None, :]
    w = 1.0 / v
    xh = xhat[:, None, :]
    yy = y[:, None, :]
    sw = w.sum(axis=2)
    sx = (w * xh).sum(axis=2)
    sxx = (w * xh * xh).sum(axis=2)
    sy = (w * yy).sum(axis=2)
    sxy = (w * xh * yy).sum(axis=2)
    det = sw * sxx - sx * sx
    beta = (sw * sxy - sx * sy) / det
    alpha = (sy - beta * sx) / sw
    resid = yy - alpha[:, :, None] - beta[:, :, None] * xh
    q = (w * resid**2).sum(axis=2)
    loglik = -0.5 * (np.log(v).sum(axis=2) + np.log(det) + q)
    return GridFit(tau, alpha, beta, sxx / det, -sx / det, sw / det, q, loglik)


def eiv_fit(
    cal: Calibrated, sx: np.ndarray, y: np.ndarray, s: np.ndarray
) -> tuple[GridFit, np.ndarray]:
    """The grid fit with the calibrated lifts' own error counted once: given x,
    ξᵢ − x̂ᵢ has variance λᵢσᵢ², so yᵢ − α − β x̂ᵢ has variance
    sᵢ² + τ² + β²λᵢσᵢ². A first pass without that term gives β̃ (at its REML
    τ̂); the second weighs by 1 / (sᵢ² + τ² + β̃²λᵢσᵢ²). Without it τ² absorbs
    the mean of β²λᵢσᵢ², and the forecast, which adds the candidate's own
    β²λ₀σ₀², counts the offline noise twice. Returns the fit and the term."""
    tau = tau_grid(y, s)
    first = wls_on_grid(cal.xhat, y, s, tau)
    beta = at(first.beta, reml_index(first))
    lam = cal.s2[:, None] / (cal.s2[:, None] + sx**2)
    extra = beta[:, None] ** 2 * lam * sx**2
    return wls_on_grid(cal.xhat, y, s, tau, extra), extra


def intercept_grid(y: np.ndarray, s: np.ndarray) -> GridFit:
    """The intercept-only model y = α + u + e on the τ grid: the weighted mean
    α̂(τ), its variance 1 / Σw in ``c00``, a slope of 0 (``c01``, ``c11`` 0)."""
    tau = tau_grid(y, s)
    v = s[:, None, :] ** 2 + tau[:, :, None] ** 2
    w = 1.0 / v
    sw = w.sum(axis=2)
    mean = (w * y[:, None, :]).sum(axis=2) / sw
    q = (w * (y[:, None, :] - mean[:, :, None]) ** 2).sum(axis=2)
    loglik = -0.5 * (np.log(v).sum(axis=2) + np.log(sw) + q)
    zero = np.zeros_like(tau)
    return GridFit(tau, mean, zero, 1.0 / sw, zero, zero, q, loglik)


def confidence_weights(fit: GridFit, df: int) -> np.ndarray:
    """Weights of the grid's τ (R, G), summing to 1: the Q-profile confidence
    distribution of τ (Viechtbauer 2007; Nagashima, Noma and Furukawa 2019).

    At the true τ the generalised residual Q(τ) is χ² with ``df`` degrees of
    freedom (k − 2 with a slope, k − 1 without), and Q falls as τ grows, so
    H(τ) = P(χ²_df > Q(τ)) is a distribution function for τ: its mass at 0 is
    H(0) (the chance that the data look as homogeneous as they do), and each
    increment of H between two grid points is split between them; the mass
    beyond the grid's end goes to its last point."""
    h = np.maximum.accumulate(special.chdtrc(df, fit.q), axis=1)
    step = np.diff(h, axis=1) / 2
    weight = np.zeros_like(h)
    weight[:, 0] = h[:, 0]
    weight[:, :-1] += step
    weight[:, 1:] += step
    weight[:, -1] += 1 - h[:, -1]
    return np.asarray(weight / weight.sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class Mixture:
    """A normal mixture per history: weights, means and sds (R, G)."""

    weight: np.ndarray
    mean: np.ndarray
    sd: np.ndarray

    def cdf(self, value: np.ndarray) -> np.ndarray:
        """P(θ ≤ value) per history; ``value`` has shape (R,)."""
        z = (value[:, None] - self.mean) / self.sd
        return np.asarray((self.weight * special.ndtr(z)).sum(axis=1))

    def quantile(self, prob: float) -> np.ndarray:
        """The ``prob`` quantile per history, by bisection."""
        lo = (self.mean - 40 * self.sd).min(axis=1)
        hi = (self.mean + 40 * self.sd).max(axis=1)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < prob
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)


def predictive(fit: GridFit, weight: np.ndarray, xhat0: np.ndarray, resid0: np.ndarray) -> Mixture:
    """The forecast of θ₀ = α + β ξ₀ + u₀: at each τ, normal with mean α + β x̂₀
    and variance h'Ch + τ² + (β² + C₁₁) λ₀σ₀² (h = (1, x̂₀))."""
    h = xhat0[:, None]
    mean = fit.alpha + fit.beta * h
    par = fit.c00 + 2 * h * fit.c01 + h * h * fit.c11
    var = par + fit.tau**2 + (fit.beta**2 + fit.c11) * resid0[:, None]
    return Mixture(weight, mean, np.sqrt(np.maximum(var, 1e-300)))


def _t_scales(df: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights and sd factors √(df / w) of a normal scale mixture close to
    Student's t with ``df`` degrees of freedom (t = Z / √(W / df), W ~ χ²_df):
    W's quantiles at the middles of 64 probability bins, finer near 0 where the
    tails come from (the 97.5% and 99.5% quantiles within 0.3% of t's from
    df = 2)."""
    from scipy import stats

    edges = np.concatenate([[0.0], np.geomspace(1e-5, 0.2, 30), np.linspace(0.2, 1.0, 35)[1:]])
    middle = (edges[1:] + edges[:-1]) / 2
    return np.diff(edges), np.sqrt(df / stats.chi2.ppf(middle, df))


def plugin_t(
    fit: GridFit,
    index: np.ndarray,
    q: np.ndarray,
    df: int,
    xhat0: np.ndarray,
    resid0: np.ndarray,
) -> Mixture:
    """The REML plug-in forecast at the grid point ``index`` (R,): θ̂₀ = α̂ + β̂ x̂₀
    with variance v = q hᵀCh + τ̂² + (β̂² + q C₁₁) λ₀σ₀², ``q`` = Q(τ̂) / df (the
    Knapp–Hartung scale, (R,)), and θ₀ − θ̂₀ ~ √v · t(df), as a normal scale
    mixture."""
    h = xhat0
    c11 = at(fit.c11, index)
    par = q * (at(fit.c00, index) + 2 * h * at(fit.c01, index) + h * h * c11)
    beta = at(fit.beta, index)
    var = par + at(fit.tau, index) ** 2 + (beta**2 + q * c11) * resid0
    mean = at(fit.alpha, index) + beta * h
    weight, factor = _t_scales(df)
    sd = np.sqrt(np.maximum(var, 1e-300))[:, None] * factor[None, :]
    return Mixture(np.tile(weight, (len(mean), 1)), np.repeat(mean[:, None], len(factor), 1), sd)


def slope_mixture(fit: GridFit, weight: np.ndarray) -> Mixture:
    """The posterior of β: the mixture over τ of N(β̂(τ), C₁₁(τ))."""
    return Mixture(weight, fit.beta, np.sqrt(np.maximum(fit.c11, 1e-300)))


def reml_index(fit: GridFit) -> np.ndarray:
    """The grid point of largest restricted likelihood per history (R,)."""
    return np.asarray(fit.loglik.argmax(axis=1))


def at(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """values[r, index[r]] for every history r."""
    return np.take_along_axis(values, index[:, None], axis=1)[:, 0]


def hksj(fit: GridFit, index: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The slope's Hartung–Knapp–Sidik–Jonkman standard error at the grid point
    ``index`` (R,): √(q · C₁₁) with q = Q / (k − 2), and q itself."""
    q = at(fit.q, index) / (k - 2)
    return np.sqrt(q * at(fit.c11, index)), q
