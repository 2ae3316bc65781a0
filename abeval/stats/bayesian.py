"""Bayesian comparison: a normal posterior on the lift.

As in GrowthBook's effect-based Bayesian engine, the data enter as the
estimated lift δ̂ with its (delta-method) variance s², the likelihood
δ̂ ~ N(δ, s²) (see :mod:`abeval.stats.moments`). With a normal prior
δ ~ N(μ₀, σ₀²) the posterior is normal (conjugacy)::

    precision = 1/s² + 1/σ₀²
    mean      = (δ̂/s² + μ₀/σ₀²) / precision,   sd = precision^(−1/2)

and with the default flat prior it is N(δ̂, s²). From the posterior N(μ, σ²):

* chance to win        P(δ > 0) = Φ(μ/σ)
* risk of control      E[max(δ, 0)]  = μ·Φ(μ/σ) + σ·φ(μ/σ)
  (the expected loss of keeping control if treatment is in fact better)
* risk of treatment    E[max(−δ, 0)] = −μ·Φ(−μ/σ) + σ·φ(μ/σ)
* credible interval    μ ± Φ⁻¹(1 − α/2)·σ

With ``relative_interval="fieller"`` (the default) the relative chance to win
is the absolute one: "the relative lift is above 0" and "the absolute lift is
above 0" are one event, so the two scales give one answer, and its sign and
decision agree with the frequentist test (a chance to win above 1 − α/2 under
the flat prior is z above the normal quantile, the test's large-sample
threshold). The delta method's relative posterior can disagree on a skewed
metric; ``"delta"`` keeps it, as gbstats does (docs/metrics.md#bayesian-view).

When lower is better the signs flip: a win is δ < 0, and the two risks swap.
The prior is given on one scale (relative by default, as in gbstats) and
carried to the other through the control mean: an absolute prior is the
relative one times |ȳC| (mean) and ȳC² (variance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from abeval.stats.distributions import norm_cdf, norm_isf, norm_pdf, norm_sf
from abeval.stats.moments import effect_moments
from abeval.stats.results import BayesianResult, Posterior, RelativeInterval
from abeval.stats.sufficient import ArmStats

PriorScale = Literal["relative", "absolute"]


@dataclass(frozen=True)
class NormalPrior:
    """A normal prior N(mean, variance) on the lift."""

    mean: float = 0.0
    variance: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and math.isfinite(self.variance) and self.variance > 0):
            raise ValueError("a normal prior needs a finite mean and a positive variance")


def risk(mean: float, sd: float) -> tuple[float, float]:
    """(E[max(δ, 0)], E[max(−δ, 0)]) for δ ~ N(mean, sd²)."""
    if sd == 0:
        return max(mean, 0.0), max(-mean, 0.0)
    z = mean / sd
    density = float(norm_pdf(z))
    return (
        mean * float(norm_cdf(z)) + sd * density,
        -mean * float(norm_cdf(-z)) + sd * density,
    )


def posterior(
    effect: float | None,
    variance: float | None,
    *,
    alpha: float = 0.05,
    prior: NormalPrior | None = None,
    lower_is_better: bool = False,
) -> Posterior:
    """Posterior summary of a lift estimated as ``effect`` with ``variance``."""
    if effect is None or variance is None or not variance > 0:
        return Posterior(mean=effect)
    if prior is None:
        mean, var = effect, variance
    else:
        precision = 1.0 / variance + 1.0 / prior.variance
        mean = (effect / variance + prior.mean / prior.variance) / precision
        var = 1.0 / precision
    sd = math.sqrt(var)
    half = float(norm_isf(alpha / 2)) * sd
    win = float(norm_sf(0.0, loc=mean, scale=sd))
    risk_control, risk_treatment = risk(mean, sd)
    if lower_is_better:
        win = 1.0 - win
        risk_control, risk_treatment = risk_treatment, risk_control
    return Posterior(
        mean=mean,
        sd=sd,
        ci=(mean - half, mean + half),
        chance_to_win=win,
        risk_control=risk_control,
        risk_treatment=risk_treatment,
    )


def compare_bayesian(
    control: ArmStats,
    treatment: ArmStats,
    *,
    alpha: float = 0.05,
    prior: NormalPrior | None = None,
    prior_scale: PriorScale = "relative",
    lower_is_better: bool = False,
    relative_interval: RelativeInterval = "fieller",
) -> BayesianResult:
    """Normal posterior of the relative and absolute lift of ``treatment``.

    ``prior`` is None for a flat prior, else a :class:`NormalPrior` on
    ``prior_scale``; it is converted to the other scale through |ȳC| (with a
    zero control mean the other scale keeps a flat prior). Same inputs and
    statuses as :func:`abeval.stats.compare`. With ``relative_interval="fieller"``
    the relative chance to win is the absolute one (module doc).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if prior_scale not in ("relative", "absolute"):
        raise ValueError(f"prior_scale must be 'relative' or 'absolute', got {prior_scale!r}")
    m = effect_moments(control, treatment)
    relative_prior, absolute_prior = prior, prior
    if prior is not None:
        base = abs(m.control_mean or 0.0)
        other = None
        if base > 0:
            factor = base if prior_scale == "relative" else 1.0 / base
            other = NormalPrior(prior.mean * factor, prior.variance * factor * factor)
        if prior_scale == "relative":
            absolute_prior = other
        else:
            relative_prior = other
    absolute, relative = (
        posterior(effect, variance, alpha=alpha, prior=p, lower_is_better=lower_is_better)
        for effect, variance, p in (
            (m.absolute, m.absolute_variance, absolute_prior),
            (m.relative, m.relative_variance, relative_prior),
        )
    )
    if relative_interval == "fieller" and m.relative is not None:
        relative = replace(relative, chance_to_win=absolute.chance_to_win)
    return BayesianResult(
        status=m.status,
        message=m.message,
        alpha=alpha,
        control_n=m.control_n,
        treatment_n=m.treatment_n,
        control_mean=m.control_mean,
        treatment_mean=m.treatment_mean,
        absolute=absolute,
        relative=relative,
        prior_scale=prior_scale if prior is not None else None,
        prior_mean=prior.mean if prior is not None else None,
        prior_variance=prior.variance if prior is not None else None,
        lower_is_better=lower_is_better,
        cuped=m.cuped,
        theta=m.theta,
    )
