"""Forecast a candidate's online lift from its offline lift and a history of
past experiments (docs/metrics.md#forecasting-the-online-lift).

Each past experiment gives one :class:`HistoryRow`: its offline lift x (with
standard error σ) and online lift y (with standard error s). The model is

    y = α + β ξ + u + e,  u ~ N(0, τ²), e ~ N(0, s²);  x = ξ + η, η ~ N(0, σ²)

:func:`fit` corrects the offline lifts' noise by regression calibration, weighs
the experiments by 1 / (s² + τ² + β̃² λσ²) (the calibrated lift's own error
counted there once, not again in τ²), integrates over τ with its Q-profile
confidence distribution on a grid (the generalised residual Q(τ) is χ² with
k − 2 degrees of freedom at the true τ), and gives the slope a
Hartung–Knapp–Sidik–Jonkman interval at the REML τ̂ with t(k − 2). Below
``SMALL_K`` experiments the forecast is the REML plug-in with the
Knapp–Hartung scale (at least 1) and t(k − 2) instead. When the offline
lifts vary no more than their noise (or not at all) it fits the
intercept-only model y = α + u + e (``model`` ``intercept_only``, ``reason``
``weak_signal`` or ``no_variation``).
:func:`predict` turns a fit and a candidate's offline lift x₀ (σ₀) into the
forecast of its *true* online lift θ₀ = α + β ξ₀ + u₀: a normal mixture over τ
whose variance at each τ holds the parameters' uncertainty, τ² and β² λ₀σ₀².
:func:`influence` names an experiment the others forecast badly, with the
forecast without it.

Degenerate inputs give a ``status`` and ``None``, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    import numpy as np

    from abeval.stats import forecast_batch as fb

ForecastStatus = Literal["ok", "too_few_experiments", "no_variation", "noise_only", "invalid_input"]
#: ``slope``: y on the calibrated offline lift; ``intercept_only``: y = α + u + e.
ForecastModel = Literal["slope", "intercept_only"]
#: Why the model is ``intercept_only``: the offline lifts vary no more than their
#: noise (``weak_signal``), not at all (``no_variation``), or it was asked for
#: (``baseline``, the board's comparison).
ForecastReason = Literal["", "weak_signal", "no_variation", "baseline"]
#: ``tau_mixture``: the normal mixture over τ's Q-profile confidence
#: distribution; ``reml_t``: the REML plug-in with the Knapp–Hartung scale and
#: t(df) (fewer than ``SMALL_K`` experiments).
IntervalMethod = Literal["tau_mixture", "reml_t"]

#: Fewest past experiments the forecast needs: with 3, Q(τ) has 1 degree of
#: freedom and the slope's interval uses t(1) (wide, and measured in
#: benchmarks/RESULTS.md); with 2 the line passes through both points.
MIN_EXPERIMENTS = 3

#: Below this many experiments the forecast is the REML plug-in with the
#: Knapp–Hartung scale q = max(Q(τ̂) / (k − p), 1) and t(k − p).
SMALL_K = 8
#: An experiment is named by :func:`influence` when its leave-one-out predictive
#: p-value times k is below this.
INFLUENCE_ALPHA = 0.05

#: The largest relative lift or standard error the forecast takes (±100,000%):
#: beyond it the squares and products of the fit overflow a float.
MAX_LIFT = 1e3
#: The smallest online standard error it takes: the weights 1 / s² of smaller
#: ones overflow (no test of fewer than some 10¹⁸ users has one).
MIN_ONLINE_SE = 1e-9


def out_of_bounds(name: str, value: float) -> str | None:
    """Why ``value`` cannot be the history's or the candidate's ``name``
    (``offline_lift``, ``offline_se``, ``online_lift``, ``online_se``), naming the
    bound; None when it can."""
    if not math.isfinite(value):
        return f"{name} {value} is not a finite number"
    if abs(value) > MAX_LIFT:
        return f"{name} {value:g} is beyond ±{MAX_LIFT:g} (a relative lift of ±100,000%)"
    if name == "online_se" and value < MIN_ONLINE_SE:
        return f"online_se {value:g} is below {MIN_ONLINE_SE:g}"
    if name.endswith("_se") and value < 0:
        return f"{name} {value:g} is negative"
    return None


@dataclass(frozen=True)
class HistoryRow:
    """One past experiment: the signal's offline lift and the online lift, each
    with its standard error (``offline_se`` may be 0: an offline lift without
    noise; ``online_se`` must be above 0)."""

    offline_lift: float
    offline_se: float
    online_lift: float
    online_se: float
    experiment: str = ""


@dataclass(frozen=True)
class TauGrid(JsonResult):
    """The fit at every τ of the grid: the confidence weight of τ and the
    weighted least squares (intercept, slope, (XᵀWX)⁻¹ entries) at that τ."""

    tau: tuple[float, ...]
    weight: tuple[float, ...]
    intercept: tuple[float, ...]
    slope: tuple[float, ...]
    c00: tuple[float, ...]
    c01: tuple[float, ...]
    c11: tuple[float, ...]


@dataclass(frozen=True)
class ForecastFit(JsonResult):
    """What the history says: ``slope`` β̂ and ``intercept`` α̂ at the REML τ̂
    (``tau``), the slope's HKSJ standard error and 1 − ``alpha`` interval with
    t(k − 2), their covariance (HKSJ-scaled, ((var α, cov), (cov, var β))), τ's
    mean and 1 − ``alpha`` interval under its Q-profile confidence distribution, and what regression
    calibration used (the offline lifts' mean and true variance S²).
    When var(x) − mean(σ²) falls below 5% of var(x) (the offline lifts'
    spread is their noise, and a slope would be noise too) or the offline lifts
    are all equal, ``model`` is ``intercept_only`` (``reason`` says which,
    ``message`` in words; ``slope`` None): the forecast is the past online
    lifts' weighted mean and spread. ``interval_method`` and ``df``: how the
    forecast's interval is made (``reml_t`` below ``SMALL_K`` experiments)."""

    status: ForecastStatus
    message: str
    k: int
    alpha: float
    intercept: float | None = None
    slope: float | None = None
    slope_se: float | None = None
    slope_interval: tuple[float, float] | None = None
    covariance: tuple[tuple[float, float], tuple[float, float]] | None = None
    hksj_scale: float | None = None
    tau: float | None = None
    tau2: float | None = None
    tau_mean: float | None = None
    tau_interval: tuple[float, float] | None = None
    offline_mean: float | None = None
    offline_true_variance: float | None = None
    reliability_floored: bool = False
    grid: TauGrid | None = None
    model: ForecastModel = "slope"
    reason: ForecastReason = ""
    interval_method: IntervalMethod = "tau_mixture"
    df: int | None = None


@dataclass(frozen=True)
class Influence(JsonResult):
    """The experiment the others forecast worst: its name, its leave-one-out
    predictive p-value (two-sided, of its online lift under the forecast fitted
    without it) times the k experiments (``p_value``, at most 1), and the
    candidate's forecast without it (``point``, ``interval``). ``flagged`` when
    ``p_value`` is below ``INFLUENCE_ALPHA``: then the experiment is outlying
    and the forecast with it is wider (or shifted) by it."""

    experiment: str
    p_value: float
    flagged: bool
    point: float | None
    interval: tuple[float, float] | None
    observed: float
    expected: float


@dataclass(frozen=True)
class Forecast(JsonResult):
    """The forecast of a candidate's true online lift θ₀: ``point`` (the
    predictive mean), its sd, the 1 − ``alpha`` prediction ``interval``,
    P(θ₀ > 0), P(θ₀ > ``mde``) when an MDE is given, the calibrated offline
    lift x̂₀, and the predictive itself as a normal mixture (``weights``,
    ``means``, ``sds``) for :func:`prob_above` and assurance. ``model``,
    ``reason`` and ``interval_method`` are the fit's; ``influence``, when
    :func:`with_influence` has looked, the most outlying past experiment."""

    status: ForecastStatus
    message: str
    alpha: float
    offline_lift: float
    offline_se: float
    point: float | None = None
    sd: float | None = None
    interval: tuple[float, float] | None = None
    p_positive: float | None = None
    mde: float | None = None
    p_above_mde: float | None = None
    calibrated_offline: float | None = None
    weights: tuple[float, ...] = ()
    means: tuple[float, ...] = ()
    sds: tuple[float, ...] = ()
    model: ForecastModel = "slope"
    reason: ForecastReason = ""
    interval_method: IntervalMethod = "tau_mixture"
    influence: Influence | None = None


def _check(rows: Sequence[HistoryRow]) -> tuple[ForecastStatus, str]:
    k = len(rows)
    if k < MIN_EXPERIMENTS:
        return "too_few_experiments", (
            f"{k} past experiment{'s' if k != 1 else ''}: "
            f"the forecast needs {MIN_EXPERIMENTS} or more"
        )
    for i, r in enumerate(rows):
        for name in ("offline_lift", "offline_se", "online_lift", "online_se"):
            wrong = out_of_bounds(name, getattr(r, name))
            if wrong is not None:
                return "invalid_input", f"row {i + 1}: {wrong}"
    return "ok", ""


def _no_variation(rows: Sequence[HistoryRow]) -> bool:
    xs = [r.offline_lift for r in rows]
    return max(xs) - min(xs) <= 1e-12 * max(max(abs(v) for v in xs), 1e-300)


def _row(values: np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in values[0])


def _grid(grid: fb.GridFit, weight: np.ndarray) -> TauGrid:
    return TauGrid(
        _row(grid.tau), _row(weight), _row(grid.alpha), _row(grid.beta),
        _row(grid.c00), _row(grid.c01), _row(grid.c11),
    )  # fmt: skip


def _tau_interval(tau: np.ndarray, weight: np.ndarray, alpha: float) -> tuple[float, float]:
    import numpy as np

    cum = np.cumsum(weight)
    return (
        float(tau[np.searchsorted(cum, alpha / 2)]),
        float(tau[min(int(np.searchsorted(cum, 1 - alpha / 2)), len(tau) - 1)]),
    )


def _intercept_only(
    rows: Sequence[HistoryRow], alpha: float, reason: ForecastReason, message: str
) -> ForecastFit:
    """The fit of y = α + u + e: τ's REML estimate and Q-profile distribution with
    k − 1 degrees of freedom, α̂ with its Knapp–Hartung variance."""
    import numpy as np

    from abeval.stats import forecast_batch as fb

    k = len(rows)
    y = np.array([[r.online_lift for r in rows]])
    s = np.array([[r.online_se for r in rows]])
    grid = fb.intercept_grid(y, s)
    weight = fb.confidence_weights(grid, k - 1)
    i = int(fb.reml_index(grid)[0])
    scale = float(grid.q[0, i]) / (k - 1)
    tau = grid.tau[0]
    return ForecastFit(
        status="ok",
        message=message,
        k=k,
        alpha=alpha,
        intercept=float(grid.alpha[0, i]),
        covariance=((scale * float(grid.c00[0, i]), 0.0), (0.0, 0.0)),
        hksj_scale=scale,
        tau=float(tau[i]),
        tau2=float(tau[i]) ** 2,
        tau_mean=float(np.sum(weight[0] * tau)),
        tau_interval=_tau_interval(tau, weight[0], alpha),
        grid=_grid(grid, weight),
        model="intercept_only",
        reason=reason,
        interval_method="reml_t" if k < SMALL_K else "tau_mixture",
        df=k - 1,
    )


def fit(
    rows: Sequence[HistoryRow], alpha: float = 0.05, intercept_only: bool = False
) -> ForecastFit:
    """Fit the forecast model to ``rows`` (one per past experiment); with
    ``intercept_only``, the model without the offline signal."""
    import numpy as np

    from abeval.stats import forecast_batch as fb
    from abeval.stats.distributions import t_isf

    k = len(rows)
    status, message = _check(rows)
    if status != "ok":
        return ForecastFit(status, message, k, alpha)
    if intercept_only:
        return _intercept_only(rows, alpha, "baseline", "")
    if _no_variation(rows):
        return _intercept_only(
            rows, alpha, "no_variation",
            "the offline lifts are all equal: no slope can be fitted; the forecast is the "
            "past experiments' online lifts alone (intercept only)",
        )  # fmt: skip
    x = np.array([[r.offline_lift for r in rows]])
    sx = np.array([[r.offline_se for r in rows]])
    y = np.array([[r.online_lift for r in rows]])
    s = np.array([[r.online_se for r in rows]])
    cal = fb.calibrate(x, sx)
    if bool(cal.floored[0]):
        spread = float(np.var(x[0], ddof=1))
        noise = float(np.mean(sx[0] ** 2))
        return _intercept_only(
            rows, alpha, "weak_signal",
            f"the offline lifts vary no more than their own noise (variance {spread:.3g}, "
            f"mean squared standard error {noise:.3g}): the forecast is the past "
            "experiments' online lifts alone (intercept only)",
        )  # fmt: skip
    grid, _ = fb.eiv_fit(cal, sx, y, s)
    weight = fb.confidence_weights(grid, k - 2)
    best = fb.reml_index(grid)
    se, q = fb.hksj(grid, best, k)
    i = int(best[0])
    slope = float(grid.beta[0, i])
    half = t_isf(alpha / 2, k - 2) * float(se[0])
    scale = float(q[0])
    cov = (
        (scale * float(grid.c00[0, i]), scale * float(grid.c01[0, i])),
        (scale * float(grid.c01[0, i]), scale * float(grid.c11[0, i])),
    )
    tau = grid.tau[0]
    return ForecastFit(
        status="ok",
        message="",
        k=k,
        alpha=alpha,
        intercept=float(grid.alpha[0, i]),
        slope=slope,
        slope_se=float(se[0]),
        slope_interval=(slope - half, slope + half),
        covariance=cov,
        hksj_scale=scale,
        tau=float(tau[i]),
        tau2=float(tau[i]) ** 2,
        tau_mean=float(np.sum(weight[0] * tau)),
        tau_interval=_tau_interval(tau, weight[0], alpha),
        offline_mean=float(cal.xbar[0]),
        offline_true_variance=float(cal.s2[0]),
        reliability_floored=bool(cal.floored[0]),
        grid=_grid(grid, weight),
        interval_method="reml_t" if k < SMALL_K else "tau_mixture",
        df=k - 2,
    )


def predict(
    fitted: ForecastFit,
    offline_lift: float,
    offline_se: float,
    alpha: float = 0.05,
    mde: float | None = None,
) -> Forecast:
    """The forecast of the true online lift of a candidate whose offline lift is
    ``offline_lift`` (standard error ``offline_se``), from ``fitted``."""
    import numpy as np

    from abeval.stats import forecast_batch as fb

    if fitted.status != "ok" or fitted.grid is None:
        return Forecast(fitted.status, fitted.message, alpha, offline_lift, offline_se, mde=mde)
    wrong = out_of_bounds("offline_lift", offline_lift) or out_of_bounds("offline_se", offline_se)
    if wrong is not None:
        return Forecast(
            "invalid_input", f"the candidate's {wrong}", alpha, offline_lift, offline_se, mde=mde
        )
    g = fitted.grid

    def arr(values: tuple[float, ...]) -> np.ndarray:
        return np.array([values])

    if fitted.model == "intercept_only":
        xhat0, resid0 = np.array([offline_lift]), np.zeros(1)  # no slope: x₀ plays no part
    else:
        assert fitted.offline_mean is not None and fitted.offline_true_variance is not None
        cal = fb.Calibrated(
            np.zeros((1, 1)),
            np.array([fitted.offline_mean]),
            np.array([fitted.offline_true_variance]),
            np.array([fitted.reliability_floored]),
        )
        xhat0, resid0 = fb.shrink(cal, np.array([offline_lift]), np.array([offline_se]))
    unused = np.zeros((1, len(g.tau)))
    grid = fb.GridFit(
        arr(g.tau), arr(g.intercept), arr(g.slope), arr(g.c00), arr(g.c01), arr(g.c11),
        unused, unused,
    )  # fmt: skip
    if fitted.interval_method == "reml_t":
        assert fitted.hksj_scale is not None and fitted.df is not None
        best = np.array([g.tau.index(fitted.tau)])
        scale = np.array([max(fitted.hksj_scale, 1.0)])  # never narrower than q = 1
        mix = fb.plugin_t(grid, best, scale, fitted.df, xhat0, resid0)
    else:
        mix = fb.predictive(grid, arr(g.weight), xhat0, resid0)
    point = float(np.sum(mix.weight * mix.mean))
    second = float(np.sum(mix.weight * (mix.sd**2 + mix.mean**2)))
    p_positive = 1.0 - float(mix.cdf(np.zeros(1))[0])
    above = None if mde is None else 1.0 - float(mix.cdf(np.array([mde]))[0])
    return Forecast(
        status="ok",
        message="",
        alpha=alpha,
        offline_lift=offline_lift,
        offline_se=offline_se,
        point=point,
        sd=math.sqrt(max(second - point**2, 0.0)),
        interval=(float(mix.quantile(alpha / 2)[0]), float(mix.quantile(1 - alpha / 2)[0])),
        p_positive=p_positive,
        mde=mde,
        p_above_mde=above,
        calibrated_offline=None if fitted.model == "intercept_only" else float(xhat0[0]),
        weights=tuple(float(v) for v in mix.weight[0]),
        means=tuple(float(v) for v in mix.mean[0]),
        sds=tuple(float(v) for v in mix.sd[0]),
        model=fitted.model,
        reason=fitted.reason,
        interval_method=fitted.interval_method,
    )


def _one(value: float) -> np.ndarray:
    import numpy as np

    return np.array([value])


def prob_above(forecast: Forecast, threshold: float) -> float | None:
    """P(θ₀ > ``threshold``) under the forecast's predictive (None when it has none)."""
    from abeval.stats.distributions import norm_sf

    if forecast.status != "ok" or not forecast.weights:
        return None
    return sum(
        w * norm_sf(threshold, m, sd)
        for w, m, sd in zip(forecast.weights, forecast.means, forecast.sds, strict=True)
    )


def _observed_mixture(forecast: Forecast, observed_se: float) -> fb.Mixture:
    """The forecast of what a test with standard error ``observed_se`` would
    measure: each component's variance plus ``observed_se²``."""
    import numpy as np

    from abeval.stats import forecast_batch as fb

    sds = np.sqrt(np.array([forecast.sds]) ** 2 + observed_se**2)
    return fb.Mixture(np.array([forecast.weights]), np.array([forecast.means]), sds)


def log_score(forecast: Forecast, observed: float, observed_se: float) -> float | None:
    """The log predictive density of an online lift ``observed`` measured with
    standard error ``observed_se``: log Σ p_g N(observed; m_g, sd_g² + se²).
    The score of a leave-one-out or backtest forecast (larger is better); None
    without a forecast."""
    import numpy as np

    if forecast.status != "ok" or not forecast.weights:
        return None
    if not (math.isfinite(observed) and math.isfinite(observed_se) and observed_se >= 0):
        return None
    mix = _observed_mixture(forecast, observed_se)
    z = (observed - mix.mean) / mix.sd
    log_terms = np.log(np.maximum(mix.weight, 1e-300)) - 0.5 * z**2 - np.log(mix.sd)
    top = float(log_terms.max())
    return top + math.log(float(np.exp(log_terms - top).sum())) - 0.5 * math.log(2 * math.pi)


def observed_interval(
    forecast: Forecast, observed_se: float, alpha: float = 0.05
) -> tuple[float, float] | None:
    """The 1 − ``alpha`` interval for what a test with standard error
    ``observed_se`` would measure (the true lift's forecast plus the test's
    noise): what a backtest can check against measured lifts."""
    if forecast.status != "ok" or not forecast.weights:
        return None
    if not (math.isfinite(observed_se) and observed_se >= 0):
        return None
    mix = _observed_mixture(forecast, observed_se)
    return float(mix.quantile(alpha / 2)[0]), float(mix.quantile(1 - alpha / 2)[0])
