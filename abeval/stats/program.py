"""The statistics of a program of experiments, from each one's lift and standard
error (docs/metrics.md#a-program-of-experiments).

- :func:`fit_prior`: the distribution of true effects across experiments by
  empirical Bayes: a normal prior with its mean and spread τ by REML, and a
  heavier-tailed alternative, a point mass at zero mixed with a normal (fitted
  by maximum marginal likelihood), chosen when its AIC is lower by more than
  :data:`AIC_MARGIN`.
- :func:`shrink`: each experiment's posterior under that prior (its shrunken
  lift and interval).
- :func:`win_rate`: wins over decided experiments, with a Wilson interval.
- :func:`impact`: the sum of shipped lifts, raw and de-biased (the sum of their
  posterior means), with the posterior interval of that sum.

Pure functions on numbers; a case with too little data is a ``status`` and a
``message``, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]
    #: Numbers given: a sequence or an array.
    Numbers = Sequence[float] | Array

#: The fewest experiments of a metric whose prior is used: fewer and the
#: shrunken lifts are the raw ones. Set by a rule on simulated programs
#: (benchmarks/bench_program.py, benchmarks/RESULTS.md#program): the smallest k
#: from which every size tested, under normal true effects, keeps at most a
#: quarter of the naive bias in the de-biased impact, with neither its
#: interval's coverage nor the posterior intervals' below 93% beyond its Wilson
#: interval. k = 6 and 8 keep 40% and 38%; 10, 13, 16, 20 keep 23%, 22%, 17%,
#: 16%, all covering.
MIN_EXPERIMENTS = 10
#: The mixture with nulls replaces the normal prior when its AIC is lower by
#: more than this (2 log-likelihood units for its one more parameter).
AIC_MARGIN = 2.0


@dataclass(frozen=True)
class Prior:
    """The distribution of true effects across the experiments of one metric.

    ``kind`` is ``normal`` (``mean``, ``sd`` = τ by REML), ``mixture`` (a share
    ``null_share`` of effects exactly 0, the rest normal with ``effect_mean`` and
    ``effect_sd``; ``mean`` and ``sd`` are the whole mixture's) or ``none`` (too
    few experiments: ``status`` ``too_few`` and ``message`` say why).
    ``mean_se`` is the standard error of the normal's REML mean."""

    kind: str
    experiments: int
    mean: float | None = None
    sd: float | None = None
    mean_se: float | None = None
    null_share: float | None = None
    effect_mean: float | None = None
    effect_sd: float | None = None
    aic_normal: float | None = None
    aic_mixture: float | None = None
    status: str = "ok"
    message: str | None = None
    #: The normal's τ integrated over (:func:`tau_grid`): (τ, weight, mean given τ,
    #: its standard error) per point; empty: τ = ``sd`` taken as known.
    tau_grid: tuple[tuple[float, float, float, float], ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        shown = asdict(self)
        del shown["tau_grid"]
        return shown


@dataclass(frozen=True)
class Shrunk:
    """One experiment's posterior under the prior: its mean (the shrunken lift),
    standard deviation, equal-tailed interval and, under the mixture, the
    probability that its true effect is exactly 0."""

    mean: float
    sd: float
    low: float
    high: float
    null_probability: float | None = None


@dataclass(frozen=True)
class WinRate:
    """Wins over decided experiments with a Wilson interval (``value`` None and a
    ``message`` when none is decided)."""

    wins: int
    decided: int
    value: float | None
    low: float | None
    high: float | None
    status: str = "ok"
    message: str | None = None


@dataclass(frozen=True)
class Impact:
    """The sum of the shipped experiments' lifts: ``raw`` (as measured) and
    ``debiased`` (the sum of their posterior means) with the posterior interval of
    that sum; ``debiased`` None and a ``message`` when no prior is used."""

    shipped: int
    raw: float
    debiased: float | None
    low: float | None
    high: float | None
    status: str = "ok"
    message: str | None = None


def _arrays(lifts: Numbers, ses: Numbers) -> tuple[Array, Array]:
    import numpy as np

    y = np.asarray(lifts, dtype=float)
    s = np.asarray(ses, dtype=float)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError("give one standard error per lift")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError("every lift must be finite and every standard error above 0")
    return y, s


def _reml_loglik(tau: float, y: Array, v: Array) -> float:
    """The restricted log-likelihood of τ (constants dropped)."""
    import numpy as np

    w = 1.0 / (v + tau * tau)
    mu = float(np.sum(w * y) / np.sum(w))
    return float(-0.5 * (np.sum(np.log(1.0 / w)) + np.log(np.sum(w)) + np.sum(w * (y - mu) ** 2)))


def _maximise(f: Any, upper: float) -> float:
    """The maximiser of ``f`` on [0, upper]: the best of a grid, refined by
    Brent's method around it (the boundary 0 kept when it is the best)."""
    import numpy as np
    from scipy.optimize import minimize_scalar

    grid = upper * np.linspace(0.0, 1.0, 41) ** 2
    values = [f(float(t)) for t in grid]
    i = int(np.argmax(values))
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    tolerance = {"xatol": max(upper * 1e-10, 1e-15)}
    found = minimize_scalar(lambda t: -f(t), bounds=(lo, hi), method="bounded", options=tolerance)
    best = float(found.x)
    return best if f(best) >= values[i] else float(grid[i])


def reml_normal(lifts: Numbers, ses: Numbers) -> tuple[float, float, float]:
    """The normal prior's (mean, τ, standard error of the mean) by REML: τ maximises
    the restricted likelihood of ``lift_i ~ N(mean, se_i² + τ²)``, the mean is
    then the precision-weighted mean."""
    import numpy as np

    y, s = _arrays(lifts, ses)
    v = s * s
    upper = 3.0 * float(np.std(y)) + float(np.max(s))
    tau = _maximise(lambda t: _reml_loglik(t, y, v), upper)
    w = 1.0 / (v + tau * tau)
    return float(np.sum(w * y) / np.sum(w)), tau, float(1.0 / math.sqrt(float(np.sum(w))))


#: Points of the grid over τ.
TAU_POINTS = 100


def tau_grid(lifts: Numbers, ses: Numbers) -> tuple[tuple[float, float, float, float], ...]:
    """τ's posterior on a grid, under a flat prior on the mean and on τ (Gelman
    2006): the restricted likelihood at the midpoints of :data:`TAU_POINTS` equal
    cells of [0, 3·sd(lifts) + max(se)], normalised; with each point, the mean and
    its standard error given that τ. The posteriors of :func:`shrink` average over
    it, so that their intervals carry τ's uncertainty as well as the mean's."""
    import numpy as np

    y, s = _arrays(lifts, ses)
    v = s * s
    upper = 3.0 * float(np.std(y)) + float(np.max(s))
    taus = upper * (np.arange(TAU_POINTS) + 0.5) / TAU_POINTS
    logs = np.array([_reml_loglik(float(t), y, v) for t in taus])
    weights = np.exp(logs - logs.max())
    weights /= weights.sum()
    out = []
    for tau, weight in zip(taus, weights, strict=True):
        w = 1.0 / (v + tau * tau)
        mean = float(np.sum(w * y) / np.sum(w))
        out.append((float(tau), float(weight), mean, float(1.0 / math.sqrt(float(np.sum(w))))))
    return tuple(out)


def _given_tau(prior: Prior, y: Array, v: Array) -> tuple[Array, Array, Array, Array, Array]:
    """(weights (G,), means (k, G), variances (k, G), shrinkage (k, G), the mean's
    standard error (G,)) of each experiment's posterior given each τ of the
    prior's grid (one point, τ = sd, when it has none)."""
    import numpy as np

    assert prior.sd is not None and prior.mean is not None and prior.mean_se is not None
    grid = prior.tau_grid or ((prior.sd, 1.0, prior.mean, prior.mean_se),)
    tau, weight, mu, mu_se = (np.array(c, dtype=float) for c in zip(*grid, strict=True))
    b = v[:, None] / (v[:, None] + tau[None, :] ** 2)
    mean = mu[None, :] + (1 - b) * (y[:, None] - mu[None, :])
    var = (1 - b) * v[:, None] + b * b * mu_se[None, :] ** 2
    return weight, mean, var, b, mu_se


def _normal_mixture_quantile(q: float, weight: Array, mean: Array, var: Array) -> Array:
    """The q-quantile of Σ_g weight_g·N(mean_ig, var_ig) for each row i, by bisection."""
    import numpy as np
    from scipy.special import ndtr

    sd = np.sqrt(np.maximum(var, 1e-300))
    lo = np.min(mean - 40 * sd, axis=1)
    hi = np.max(mean + 40 * sd, axis=1)
    for _ in range(80):
        mid = (lo + hi) / 2
        cdf = ndtr((mid[:, None] - mean) / sd) @ weight
        lo, hi = np.where(cdf < q, mid, lo), np.where(cdf < q, hi, mid)
    return np.asarray((lo + hi) / 2)


def _normal_logpdf(y: Array, mean: Array | float, var: Array) -> Array:
    import numpy as np

    return np.asarray(-0.5 * (np.log(2 * np.pi * var) + (y - mean) ** 2 / var))


def mixture_loglik(
    null_share: float, mean: float, sd: float, lifts: Numbers, ses: Numbers
) -> float:
    """The marginal log-likelihood of the lifts under the mixture prior: each
    lift ~ null_share·N(0, se²) + (1 − null_share)·N(mean, se² + sd²)."""
    import numpy as np

    y, s = _arrays(lifts, ses)
    v = s * s
    a = np.log(null_share) + _normal_logpdf(y, 0.0, v) if null_share > 0 else -np.inf * y
    b = np.log1p(-null_share) + _normal_logpdf(y, mean, v + sd * sd) if null_share < 1 else None
    return float(np.sum(a if b is None else np.logaddexp(a, b)))


def _ml_normal(y: Array, s: Array) -> float:
    """The normal prior's maximum marginal log-likelihood (for the AIC)."""
    import numpy as np

    v = s * s

    def profile(tau: float) -> float:
        w = 1.0 / (v + tau * tau)
        mu = float(np.sum(w * y) / np.sum(w))
        return float(np.sum(_normal_logpdf(y, mu, v + tau * tau)))

    return profile(_maximise(profile, 3.0 * float(np.std(y)) + float(np.max(s))))


def _ml_mixture(y: Array, s: Array) -> tuple[float, float, float, float]:
    """The mixture's (null share, mean, sd, log-likelihood) by maximum marginal
    likelihood, from a few starts."""
    import numpy as np
    from scipy.optimize import minimize

    scale = float(np.std(y)) + float(np.median(s))

    def negative(p: Array) -> float:
        share = 1.0 / (1.0 + math.exp(-float(np.clip(p[0], -30, 30))))
        return -mixture_loglik(share, float(p[1]) * scale, math.exp(p[2]) * scale, y, s)

    best: Any = None
    for share in (0.2, 0.5, 0.8):
        mean = float(np.mean(y)) / (1 - share) / scale
        start = np.array([math.log(share / (1 - share)), mean, math.log(0.5)])
        found = minimize(negative, start, method="Nelder-Mead", options={"xatol": 1e-6})
        if best is None or found.fun < best.fun:
            best = found
    share = 1.0 / (1.0 + math.exp(-float(np.clip(best.x[0], -30, 30))))
    return share, float(best.x[1]) * scale, math.exp(best.x[2]) * scale, -float(best.fun)


def fit_prior(lifts: Numbers, ses: Numbers, *, min_experiments: int = MIN_EXPERIMENTS) -> Prior:
    """The prior of true effects (module docstring): ``none`` below
    ``min_experiments`` experiments, else the normal by REML unless the mixture
    with nulls has an AIC lower by more than :data:`AIC_MARGIN`."""
    k = len(lifts)
    if k < min_experiments:
        return Prior(
            kind="none",
            experiments=k,
            status="too_few",
            message=f"a prior needs at least {min_experiments} experiments of a metric and "
            f"{k} {'is' if k == 1 else 'are'} given: the shrunken lifts are the raw ones",
        )
    y, s = _arrays(lifts, ses)
    mean, tau, mean_se = reml_normal(y, s)
    aic_normal = 2 * 2 - 2 * _ml_normal(y, s)
    share, m1, sd1, loglik = _ml_mixture(y, s)
    aic_mixture = 2 * 3 - 2 * loglik
    if aic_mixture < aic_normal - AIC_MARGIN:
        whole = (1 - share) * m1
        var = (1 - share) * (sd1 * sd1 + m1 * m1) - whole * whole
        return Prior(
            kind="mixture", experiments=k, mean=whole, sd=math.sqrt(max(var, 0.0)),
            null_share=share, effect_mean=m1, effect_sd=sd1,
            aic_normal=aic_normal, aic_mixture=aic_mixture,
        )  # fmt: skip
    return Prior(
        kind="normal", experiments=k, mean=mean, sd=tau, mean_se=mean_se,
        aic_normal=aic_normal, aic_mixture=aic_mixture, tau_grid=tau_grid(y, s),
    )  # fmt: skip


def posterior_arrays(
    prior: Prior, lifts: Numbers, ses: Numbers, alpha: float = 0.05
) -> tuple[Array, Array, Array, Array, Array | None]:
    """Every experiment's posterior (mean, sd, low, high, P(effect = 0)) as arrays:
    :func:`shrink`'s numbers, for many experiments at once."""
    import numpy as np
    from scipy.special import ndtri

    y, s = _arrays(lifts, ses)
    v = s * s
    z = float(ndtri(1 - alpha / 2))
    if prior.kind == "none":
        return y, s, y - z * s, y + z * s, None
    if prior.kind == "normal":
        weight, means, variances, *_ = _given_tau(prior, y, v)
        mean = means @ weight
        if len(weight) == 1:
            sd = np.sqrt(variances[:, 0])
            return mean, sd, mean - z * sd, mean + z * sd, None
        sd = np.sqrt(np.maximum((variances + means * means) @ weight - mean * mean, 0.0))
        low = _normal_mixture_quantile(alpha / 2, weight, means, variances)
        high = _normal_mixture_quantile(1 - alpha / 2, weight, means, variances)
        return mean, sd, low, high, None
    assert prior.null_share is not None and prior.effect_mean is not None
    assert prior.effect_sd is not None
    t2 = prior.effect_sd**2
    a = np.log(prior.null_share) + _normal_logpdf(y, 0.0, v)
    c = np.log1p(-prior.null_share) + _normal_logpdf(y, prior.effect_mean, v + t2)
    p0 = np.exp(a - np.logaddexp(a, c))
    m = (t2 * y + v * prior.effect_mean) / (v + t2)
    cv = v * t2 / (v + t2)
    mean = (1 - p0) * m
    sd = np.sqrt(np.maximum((1 - p0) * (cv + m * m) - mean * mean, 0.0))
    low = _mixture_quantile(alpha / 2, p0, m, np.sqrt(cv))
    high = _mixture_quantile(1 - alpha / 2, p0, m, np.sqrt(cv))
    return mean, sd, low, high, p0


def _mixture_quantile(q: float, p0: Array, m: Array, sd: Array) -> Array:
    """The q-quantile of p0·δ₀ + (1 − p0)·N(m, sd²), element-wise, by bisection
    (the distribution function jumps by p0 at 0)."""
    import numpy as np
    from scipy.special import ndtr

    sd = np.maximum(sd, 1e-300)
    below = (1 - p0) * ndtr(-m / sd)  # P(X < 0)
    at_zero = (below < q) & (q <= below + p0)
    lo = np.minimum(m - 40 * sd, 0.0)
    hi = np.maximum(m + 40 * sd, 0.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        cdf = (1 - p0) * ndtr((mid - m) / sd) + p0 * (mid >= 0)
        lo, hi = np.where(cdf < q, mid, lo), np.where(cdf < q, hi, mid)
    return np.asarray(np.where(at_zero, 0.0, (lo + hi) / 2))


def shrink(prior: Prior, lifts: Numbers, ses: Numbers, alpha: float = 0.05) -> list[Shrunk]:
    """Each experiment's posterior under ``prior`` at level 1 − ``alpha``: given τ,
    under the normal prior N(mean, τ²) a lift y with standard error s shrinks to
    mean + τ²/(τ² + s²)·(y − mean), its variance s²τ²/(s² + τ²) plus the mean's
    variance times (s²/(s² + τ²))²; the posterior averages these normals over τ's
    grid (:func:`tau_grid`), its interval their equal-tailed quantiles. Under no
    prior it is the raw lift."""
    mean, sd, low, high, p0 = posterior_arrays(prior, lifts, ses, alpha)
    return [
        Shrunk(
            mean=float(mean[i]),
            sd=float(sd[i]),
            low=float(low[i]),
            high=float(high[i]),
            null_probability=None if p0 is None else float(p0[i]),
        )
        for i in range(len(mean))
    ]


def wilson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Wilson score interval of a proportion (trials above 0)."""
    from scipy.special import ndtri

    z = float(ndtri(1 - alpha / 2))
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def win_rate(wins: int, decided: int, alpha: float = 0.05) -> WinRate:
    """``wins`` over ``decided`` with its Wilson interval at level 1 − ``alpha``."""
    if decided == 0:
        message = "no experiment is decided (shipped, rolled_back or abandoned)"
        return WinRate(wins, 0, None, None, None, status="none_decided", message=message)
    low, high = wilson_interval(wins, decided, alpha)
    return WinRate(wins, decided, wins / decided, low, high)


def impact(
    prior: Prior,
    lifts: Numbers,
    ses: Numbers,
    shipped: Sequence[bool],
    alpha: float = 0.05,
) -> Impact:
    """The shipped experiments' summed lift, raw and de-biased: the sum of their
    posterior means under ``prior`` (fitted on every experiment, shipped or not),
    and the interval of that sum. Under the normal prior, given τ the sum is
    normal with the posteriors' variances plus the mean's variance times
    (Σ s²/(s² + τ²))² − Σ (s²/(s² + τ²))² (the experiments share that mean), and
    the interval is the quantiles of its average over τ's grid; under the
    mixture, mean ± z·sd with the sum of the posteriors' variances."""
    import numpy as np
    from scipy.special import ndtri

    y, s = _arrays(lifts, ses)
    chosen = np.asarray(shipped, dtype=bool)
    raw = float(np.sum(y[chosen]))
    n = int(np.sum(chosen))
    if n == 0:
        message = "no experiment is shipped"
        return Impact(0, 0.0, None, None, None, status="none_shipped", message=message)
    if prior.kind == "none":
        return Impact(n, raw, None, None, None, status=prior.status, message=prior.message)
    z = float(ndtri(1 - alpha / 2))
    if prior.kind == "normal":
        weight, means, variances, b, mu_se = _given_tau(prior, y, s * s)
        sums = np.sum(means[chosen], axis=0)
        var = np.sum(variances[chosen], axis=0) + (
            np.sum(b[chosen], axis=0) ** 2 - np.sum(b[chosen] ** 2, axis=0)
        ) * (mu_se**2)
        total = float(sums @ weight)
        if len(weight) == 1:
            half = z * math.sqrt(float(var[0]))
            return Impact(n, raw, total, total - half, total + half)
        low = _normal_mixture_quantile(alpha / 2, weight, sums[None, :], var[None, :])
        high = _normal_mixture_quantile(1 - alpha / 2, weight, sums[None, :], var[None, :])
        return Impact(n, raw, total, float(low[0]), float(high[0]))
    mean, sd, *_ = posterior_arrays(prior, y, s, alpha)
    total = float(np.sum(mean[chosen]))
    half = z * math.sqrt(float(np.sum(sd[chosen] ** 2)))
    return Impact(n, raw, total, total - half, total + half)
