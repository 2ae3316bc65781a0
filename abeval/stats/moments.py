"""From two arms' sufficient statistics to the moments of the lift.

Every test in this package (Welch, sequential, Bayesian) starts from the same
numbers: the absolute and relative lift and their variances. This module
computes them once, and decides the status of degenerate inputs.

Per arm we need n, the mean ȳ and per-user variance of the metric, and for
CUPED the covariate's mean x̄, variance and covariance with y. Means and
variances by kind of metric:

* mean metric: ȳ = Σy/n, var = Σ(y − ȳ)²/(n − 1);
* proportion: ȳ = p, var = p(1 − p) (gbstats' convention);
* ratio metric: ȳ = Σm/Σd, var = delta-method variance of the linearised
  values (m − R·d)/μd, covariance term included (Deng, Knoblich and Lu 2018).

With θ = 0 unless CUPED applies, aT = ȳT − θx̄T and vT = var(yT) + θ²var(xT) −
2θcov_T, likewise for control::

    absolute  aT − aC,         variance vT/nT + vC/nC
    relative  (aT − aC)/|ȳC|,  variance vT/(nT·ȳC²)
                               + (var(yC)·ȳT²/ȳC² − 2θ·cov_C·ȳT/ȳC + θ²·var(xC))/(nC·ȳC²)
    Welch–Satterthwaite dof = (vT/nT + vC/nC)² / ((vT/nT)²/(nT − 1) + (vC/nC)²/(nC − 1))

With θ = 0 the relative variance is gbstats' ``variance_of_ratios`` (the
delta method for ȳT/ȳC with independent arms, control uncertainty included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from abeval.stats.cuped import cuped_theta, variance_reduction
from abeval.stats.results import Status
from abeval.stats.sufficient import (
    ArmStats,
    CupedStats,
    MeanStats,
    RatioCupedStats,
    RatioStats,
    is_finite_stats,
)

#: The status message when only the delta method's relative variance is missing.
NO_DELTA_VARIANCE = "the relative lift has no delta-method variance"


@dataclass(frozen=True)
class ArmMoments:
    """One arm reduced to what the tests need (covariate fields are 0 without CUPED)."""

    n: int
    mean: float
    variance: float
    covariate_mean: float = 0.0
    covariate_variance: float = 0.0
    covariance: float = 0.0

    def adjusted_mean(self, theta: float) -> float:
        return self.mean - theta * self.covariate_mean

    def adjusted_variance(self, theta: float) -> float:
        v = self.variance + theta * theta * self.covariate_variance - 2 * theta * self.covariance
        return max(v, 0.0)


@dataclass(frozen=True)
class EffectMoments:
    """The lift of treatment over control with its variance, on both scales.

    Undefined values are None and ``status``/``message`` say why; ``dof`` is the
    Welch–Satterthwaite degrees of freedom of the absolute lift (used for both).
    ``control_mean_variance`` is Var(ȳC) and ``absolute_control_covariance``
    Cov(absolute lift, ȳC) = −(var(yC) − θ·cov_C)/nC: with the absolute lift and
    its variance, the terms of Fieller's interval (docs/metrics.md#relative-lift).
    """

    status: Status
    message: str
    control_n: int
    treatment_n: int
    control_mean: float | None
    treatment_mean: float | None
    absolute: float | None = None
    absolute_variance: float | None = None
    relative: float | None = None
    relative_variance: float | None = None
    dof: float | None = None
    control_mean_variance: float | None = None
    absolute_control_covariance: float | None = None
    cuped: bool = False
    theta: float | None = None
    variance_reduction: float | None = None


def arm_moments(stats: ArmStats) -> ArmMoments:
    """n, mean and per-user variance of one arm (with the covariate's for CUPED)."""
    if isinstance(stats, CupedStats | RatioCupedStats):
        return ArmMoments(
            n=stats.n,
            mean=stats.post.mean,
            variance=stats.post.variance,
            covariate_mean=stats.pre.mean,
            covariate_variance=stats.pre.variance,
            covariance=stats.covariance,
        )
    return ArmMoments(n=stats.n, mean=stats.mean, variance=stats.variance)


def _post(stats: ArmStats) -> MeanStats | RatioStats:
    return stats.post if isinstance(stats, CupedStats | RatioCupedStats) else stats


def _kind(stats: ArmStats) -> type:
    for kind in (CupedStats, RatioCupedStats, RatioStats, MeanStats):
        if isinstance(stats, kind):
            return kind
    raise TypeError(f"not a sufficient statistic: {type(stats).__name__}")


def _negative(stats: ArmStats) -> bool:
    post = _post(stats)
    parts: list[MeanStats | RatioStats] = [post]
    if isinstance(stats, CupedStats | RatioCupedStats):
        parts.append(stats.pre)
    for part in parts:
        squares = (part.m_ss, part.d_ss) if isinstance(part, RatioStats) else (part.ss,)
        if part.n < 0 or min(squares) < 0:
            return True
    return False


def _invalid(control: ArmStats, treatment: ArmStats) -> tuple[Status, str] | None:
    """The first problem that leaves no lift at all, or None."""
    arms = (("control", control), ("treatment", treatment))
    for name, stats in arms:
        if not is_finite_stats(stats) or _negative(stats):
            return "invalid_input", f"{name}: a sum is not finite or a count/sum of squares < 0"
    for name, stats in arms:
        if stats.n == 0:
            return "empty_arm", f"{name} has no users"
    for name, stats in arms:
        if stats.n < 2:
            return "too_few_users", f"{name} has 1 user; a variance needs at least 2 per arm"
    for name, stats in arms:
        post = _post(stats)
        if isinstance(post, RatioStats) and post.d_sum == 0:
            return "zero_denominator", f"{name}: the ratio's denominator sums to 0"
    return None


def _theta(control: ArmStats, treatment: ArmStats) -> tuple[float | None, str]:
    """θ when CUPED applies, else None and the reason (empty when not asked for)."""
    if not isinstance(control, CupedStats | RatioCupedStats):
        return None, ""
    assert isinstance(treatment, CupedStats | RatioCupedStats)
    pre_denominators = [s.pre.d_sum for s in (control, treatment) if isinstance(s, RatioCupedStats)]
    if 0 in pre_denominators:
        return None, "CUPED not applied: the pre-period denominator sums to 0 in an arm"
    theta = cuped_theta(control, treatment)
    if theta is None:
        return None, "CUPED not applied: the pre-period covariate has no variance"
    return theta, ""


def effect_moments(control: ArmStats, treatment: ArmStats) -> EffectMoments:
    """Absolute and relative lift of ``treatment`` over ``control`` with variances.

    Both arms must be the same kind of statistics (:class:`MeanStats` or
    :class:`ProportionStats`, :class:`RatioStats`, :class:`CupedStats`,
    :class:`RatioCupedStats`); mixing kinds is a programming error (TypeError).
    Degenerate data never raises: the status says what is missing.
    """
    if _kind(control) is not _kind(treatment):
        raise TypeError(
            f"control and treatment differ in kind: {type(control).__name__} "
            f"and {type(treatment).__name__}"
        )
    n_c, n_t = control.n, treatment.n
    problem = _invalid(control, treatment)
    if problem is not None:
        means_defined = problem[0] == "too_few_users"
        return EffectMoments(
            status=problem[0],
            message=problem[1],
            control_n=n_c,
            treatment_n=n_t,
            control_mean=_post(control).mean if means_defined else None,
            treatment_mean=_post(treatment).mean if means_defined else None,
        )
    c, t = arm_moments(control), arm_moments(treatment)
    theta, note = _theta(control, treatment)
    th = theta if theta is not None else 0.0
    v_c, v_t = c.adjusted_variance(th), t.adjusted_variance(th)
    abs_effect = t.adjusted_mean(th) - c.adjusted_mean(th)
    abs_var = v_t / n_t + v_c / n_c
    reduction = None
    if theta is not None:
        reduction = variance_reduction(c.variance / n_c + t.variance / n_t, abs_var)
    base = EffectMoments(
        status="ok",
        message=note,
        control_n=n_c,
        treatment_n=n_t,
        control_mean=c.mean,
        treatment_mean=t.mean,
        absolute=abs_effect,
        cuped=theta is not None,
        theta=theta,
        variance_reduction=reduction,
    )
    if not math.isfinite(abs_var):
        return replace(base, status="invalid_input", message="the variance is out of range")
    if not abs_var > 0:
        return replace(
            base,
            status="zero_variance",
            message=_join(note, "both arms are constant: the lift has no variance"),
            relative=abs_effect / abs(c.mean) if c.mean != 0 else None,
        )
    share_t, share_c = v_t / n_t / abs_var, v_c / n_c / abs_var  # scaled: no overflow
    dof = 1.0 / (share_t * share_t / (n_t - 1) + share_c * share_c / (n_c - 1))
    base = replace(
        base,
        absolute_variance=abs_var,
        dof=dof,
        control_mean_variance=c.variance / n_c,
        absolute_control_covariance=-(c.variance - th * c.covariance) / n_c,
    )
    if c.mean == 0:
        return replace(
            base, status="zero_baseline", message=_join(note, "control mean is 0: no relative lift")
        )
    ratio = t.mean / c.mean
    control_part = (
        c.variance * ratio * ratio - 2 * th * c.covariance * ratio + th * th * c.covariate_variance
    )
    rel_var = (v_t / n_t + max(control_part, 0.0) / n_c) / abs(c.mean) / abs(c.mean)
    rel_effect = abs_effect / abs(c.mean)
    if not rel_var > 0 or not math.isfinite(rel_var):
        return replace(
            base,
            status="zero_variance",
            message=_join(note, NO_DELTA_VARIANCE),
            relative=rel_effect,
        )
    return replace(base, relative=rel_effect, relative_variance=rel_var)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
