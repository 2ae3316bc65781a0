"""Frequentist comparison of two arms: Welch's t test, or a confidence sequence.

Welch (1947) with Welch–Satterthwaite degrees of freedom ν (see
:mod:`abeval.stats.moments` for the lift and its variance). For an estimate
δ with standard error se::

    p  = 2·(1 − F_ν(|δ|/se))
    CI = δ ± F_ν⁻¹(1 − α/2)·se

with F_ν the Student t distribution. The relative lift's interval is, by
default, Fieller's at the same critical value with the absolute lift's p-value
(:mod:`abeval.stats.fieller`); with ``relative_interval="delta"`` it is the
delta-method δ ± F_ν⁻¹(1 − α/2)·se with the same ν, as gbstats does. With
``sequential=True`` the interval is the always-valid
confidence sequence and the p-value the always-valid p-value of
:mod:`abeval.stats.sequential`, with n = n_T + n_C users.
"""

from __future__ import annotations

import math
from dataclasses import replace

from abeval.stats.distributions import norm_isf, norm_sf, t_isf, t_sf
from abeval.stats.fieller import fieller_interval
from abeval.stats.moments import NO_DELTA_VARIANCE, EffectMoments, effect_moments
from abeval.stats.results import Comparison, FiellerTerms, Lift, Method, RelativeInterval
from abeval.stats.sequential import (
    DEFAULT_TUNING_N,
    sequential_critical_value,
    sequential_p_value,
    sequential_rho,
)
from abeval.stats.sufficient import ArmStats, ProportionStats


def critical_value(
    alpha: float,
    *,
    dof: float | None = None,
    method: Method = "welch",
    n: int = 0,
    tuning_n: float = DEFAULT_TUNING_N,
    rho: float | None = None,
) -> float:
    """The multiple of the standard error a two-sided 1 − α interval spans: the t
    quantile with ``dof`` (normal when None) for Welch, the confidence sequence's
    c(n) after ``n`` users for the sequential method (mixing scale ``rho``, by
    default the one tuned for α and ``tuning_n``)."""
    if method == "sequential":
        return sequential_critical_value(n, alpha, tuning_n, rho=rho)
    if dof is None:
        return float(norm_isf(alpha / 2))
    return float(t_isf(alpha / 2, dof))


def confidence_interval(
    effect: float,
    se: float,
    alpha: float,
    *,
    dof: float | None = None,
    method: Method = "welch",
    n: int = 0,
    tuning_n: float = DEFAULT_TUNING_N,
    rho: float | None = None,
) -> tuple[float, float]:
    """Two-sided 1 − α interval effect ± :func:`critical_value` · se."""
    half = critical_value(alpha, dof=dof, method=method, n=n, tuning_n=tuning_n, rho=rho) * se
    return effect - half, effect + half


def p_value(
    effect: float,
    se: float,
    *,
    dof: float | None = None,
    method: Method = "welch",
    n: int = 0,
    alpha: float = 0.05,
    tuning_n: float = DEFAULT_TUNING_N,
) -> float:
    """Two-sided p-value of H0: effect = 0 (always-valid for the sequential method)."""
    z = effect / se
    if method == "sequential":
        return sequential_p_value(z, n, alpha, tuning_n)
    if dof is None:
        return float(2 * norm_sf(abs(z)))
    return float(2 * t_sf(abs(z), dof))


def _lift(
    effect: float | None,
    variance: float | None,
    dof: float | None,
    alpha: float,
    method: Method,
    n: int,
    tuning_n: float,
) -> Lift:
    if effect is None or variance is None or not variance > 0:
        return Lift(effect=effect)
    se = math.sqrt(variance)
    dof = None if method == "sequential" else dof
    return Lift(
        effect=effect,
        se=se,
        ci=confidence_interval(effect, se, alpha, dof=dof, method=method, n=n, tuning_n=tuning_n),
        p_value=p_value(effect, se, dof=dof, method=method, n=n, alpha=alpha, tuning_n=tuning_n),
        dof=dof,
    )


def fieller_terms(m: EffectMoments, nonnegative: bool) -> FiellerTerms | None:
    """The terms of Fieller's relative interval, None when there is no relative lift."""
    if (
        m.relative is None
        or m.absolute is None
        or m.absolute_variance is None
        or m.control_mean is None
        or m.control_mean_variance is None
        or m.absolute_control_covariance is None
    ):
        return None
    return FiellerTerms(
        numerator=m.absolute,
        numerator_variance=m.absolute_variance,
        denominator=m.control_mean,
        denominator_variance=m.control_mean_variance,
        covariance=m.absolute_control_covariance,
        nonnegative=nonnegative,
    )


def fieller_lift(absolute: Lift, relative: Lift, terms: FiellerTerms, critical: float) -> Lift:
    """The relative lift with Fieller's interval at ``critical`` and the absolute
    lift's p-value: one null hypothesis, one p-value (docs/metrics.md#relative-lift)."""
    interval = fieller_interval(terms, critical)
    return replace(
        relative,
        ci=interval.ci,
        p_value=absolute.p_value,
        dof=absolute.dof,
        interval_note=interval.message,
    )


def compare(
    control: ArmStats,
    treatment: ArmStats,
    *,
    alpha: float = 0.05,
    sequential: bool = False,
    tuning_n: float = DEFAULT_TUNING_N,
    relative_interval: RelativeInterval = "fieller",
    nonnegative: bool | None = None,
) -> Comparison:
    """Compare ``treatment`` with ``control``: absolute and relative lift with
    standard error, two-sided 1 − α interval, p-value and Welch dof.

    Accepts :class:`MeanStats`, :class:`ProportionStats`, :class:`RatioStats`
    (delta method), :class:`CupedStats` and :class:`RatioCupedStats` (CUPED with
    θ pooled over both arms), the same kind in both arms. ``sequential=True``
    gives always-valid confidence sequences and p-values tuned at ``tuning_n``
    total users (see :mod:`abeval.stats.sequential`). The relative interval is
    Fieller's (``relative_interval="fieller"``, with the absolute p-value) or the
    delta method's (``"delta"``, gbstats); ``nonnegative`` (default: True for
    proportions) clips Fieller's lower end at −100%. Degenerate inputs give a
    result whose ``status`` is not ``ok``, never an exception.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if relative_interval not in ("fieller", "delta"):
        raise ValueError(
            f"relative_interval must be 'fieller' or 'delta', got {relative_interval!r}"
        )
    if sequential:
        sequential_rho(alpha, tuning_n)  # validates tuning_n
    method: Method = "sequential" if sequential else "welch"
    m = effect_moments(control, treatment)
    n = m.control_n + m.treatment_n
    absolute = _lift(m.absolute, m.absolute_variance, m.dof, alpha, method, n, tuning_n)
    relative = _lift(m.relative, m.relative_variance, m.dof, alpha, method, n, tuning_n)
    terms = None
    status, message = m.status, m.message
    if relative_interval == "fieller":
        if nonnegative is None:
            nonnegative = isinstance(control, ProportionStats)
        terms = fieller_terms(m, nonnegative) if absolute.p_value is not None else None
        if terms is not None:
            dof = None if sequential else m.dof
            critical = critical_value(alpha, dof=dof, method=method, n=n, tuning_n=tuning_n)
            relative = fieller_lift(absolute, relative, terms, critical)
            if status == "zero_variance":  # only the delta method lacked a variance
                status = "ok"
                message = "; ".join(p for p in message.split("; ") if p != NO_DELTA_VARIANCE)
    return Comparison(
        status=status,
        message=message,
        method=method,
        alpha=alpha,
        control_n=m.control_n,
        treatment_n=m.treatment_n,
        control_mean=m.control_mean,
        treatment_mean=m.treatment_mean,
        absolute=absolute,
        relative=relative,
        cuped=m.cuped,
        theta=m.theta,
        variance_reduction=m.variance_reduction,
        tuning_n=tuning_n if sequential else None,
        relative_interval=relative_interval,
        fieller=terms,
    )
