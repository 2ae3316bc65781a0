"""Frequentist comparison of two arms: Welch's t test, or a confidence sequence.

Welch (1947) with Welch–Satterthwaite degrees of freedom ν (see
:mod:`abeval.stats.moments` for the lift and its variance). For an estimate
δ with standard error se::

    p  = 2·(1 − F_ν(|δ|/se))
    CI = δ ± F_ν⁻¹(1 − α/2)·se

with F_ν the Student t distribution. The relative lift uses the same ν (as
gbstats does). With ``sequential=True`` the interval is the always-valid
confidence sequence and the p-value the always-valid p-value of
:mod:`abeval.stats.sequential`, with n = n_T + n_C users.
"""

from __future__ import annotations

import math

from abeval.stats.distributions import norm_isf, norm_sf, t_isf, t_sf
from abeval.stats.moments import effect_moments
from abeval.stats.results import Comparison, Lift, Method
from abeval.stats.sequential import (
    DEFAULT_TUNING_N,
    sequential_halfwidth,
    sequential_p_value,
    sequential_rho,
)
from abeval.stats.sufficient import ArmStats


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
    """Two-sided 1 − α interval: t with ``dof`` (normal when None) for Welch, the
    confidence sequence after ``n`` users for the sequential method (mixing
    scale ``rho``, by default the one tuned for α and ``tuning_n``)."""
    if method == "sequential":
        half = sequential_halfwidth(se, n, alpha, tuning_n, rho=rho)
    elif dof is None:
        half = float(norm_isf(alpha / 2)) * se
    else:
        half = float(t_isf(alpha / 2, dof)) * se
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


def compare(
    control: ArmStats,
    treatment: ArmStats,
    *,
    alpha: float = 0.05,
    sequential: bool = False,
    tuning_n: float = DEFAULT_TUNING_N,
) -> Comparison:
    """Compare ``treatment`` with ``control``: absolute and relative lift with
    standard error, two-sided 1 − α interval, p-value and Welch dof.

    Accepts :class:`MeanStats`, :class:`ProportionStats`, :class:`RatioStats`
    (delta method), :class:`CupedStats` and :class:`RatioCupedStats` (CUPED with
    θ pooled over both arms), the same kind in both arms. ``sequential=True``
    gives always-valid confidence sequences and p-values tuned at ``tuning_n``
    total users (see :mod:`abeval.stats.sequential`). Degenerate inputs give a
    result whose ``status`` is not ``ok``, never an exception.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if sequential:
        sequential_rho(alpha, tuning_n)  # validates tuning_n
    method: Method = "sequential" if sequential else "welch"
    m = effect_moments(control, treatment)
    n = m.control_n + m.treatment_n
    return Comparison(
        status=m.status,
        message=m.message,
        method=method,
        alpha=alpha,
        control_n=m.control_n,
        treatment_n=m.treatment_n,
        control_mean=m.control_mean,
        treatment_mean=m.treatment_mean,
        absolute=_lift(m.absolute, m.absolute_variance, m.dof, alpha, method, n, tuning_n),
        relative=_lift(m.relative, m.relative_variance, m.dof, alpha, method, n, tuning_n),
        cuped=m.cuped,
        theta=m.theta,
        variance_reduction=m.variance_reduction,
        tuning_n=tuning_n if sequential else None,
    )
