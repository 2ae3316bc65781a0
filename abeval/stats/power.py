"""Power analysis: users needed for a lift, or the lift detectable with given users.

Two-sided test, normal approximation, a per-user variance σ² equal in both arms
(the baseline's). For an absolute effect Δ and arms of nC and nT users the
estimate has standard error se = σ·sqrt(1/nC + 1/nT); the test rejects when
|estimate| > c·se, so its power is::

    power = Φ(Δ/se − c) + Φ(−Δ/se − c)

with c = z₁₋α/₂ for a fixed-horizon test (both tails counted, as statsmodels'
``NormalIndPower`` does; Chow, Shao and Wang 2008, ch. 3). For a sequential test
c is the confidence-sequence multiplier c(n) at n = nC + nT users
(:func:`abeval.stats.sequential_critical_value`): the power is then that of the
always-valid interval excluding 0 at the final look, a lower bound on the
chance of having stopped by then. A relative MDE δ means Δ = δ·|μ| for baseline
mean μ.

For a proportion pass σ² = p(1 − p); for a ratio metric the delta-method
per-user variance (``RatioStats.variance``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from abeval.stats.distributions import norm_cdf, norm_isf, norm_pdf
from abeval.stats.moments import arm_moments, effect_moments
from abeval.stats.results import PowerResult, PowerStatus
from abeval.stats.sequential import DEFAULT_TUNING_N, sequential_critical_value
from abeval.stats.sufficient import ArmStats

#: Above this many users the search gives up ("unreachable").
_MAX_USERS = 1e13


def power_of_test(noncentrality: float, critical_value: float) -> float:
    """Φ(λ − c) + Φ(−λ − c): the chance that |Z + λ| > c for Z standard normal."""
    return float(
        norm_cdf(noncentrality - critical_value) + norm_cdf(-noncentrality - critical_value)
    )


def _noncentrality(critical_value: float, power: float) -> float:
    """λ ≥ 0 with power_of_test(λ, c) = power (power above the size 2Φ(−c)).

    Newton's method on g(λ) = Φ(λ − c) + Φ(−λ − c) − power, which increases on
    λ ≥ 0 with slope φ(λ − c) − φ(λ + c), from λ₀ = c + z_power (the root when
    the far tail Φ(−λ − c) is left out), inside a bracket [lo, hi] around the root
    that each step narrows; a step that would leave it bisects instead. It stops
    when a step moves λ by a few units in the last place. (Not scipy.optimize:
    importing it is 0.15 s of every report's start-up; tests/stats compare the
    two.)"""
    c = critical_value
    z = float(norm_isf(1 - power))
    lo, hi = 0.0, max(c + z + 1.0, 1.0)
    lam = c + z if lo < c + z < hi else (lo + hi) / 2
    for _ in range(200):
        gap = power_of_test(lam, c) - power
        if gap == 0:
            return lam
        if gap < 0:
            lo = lam
        else:
            hi = lam
        slope = norm_pdf(lam - c) - norm_pdf(lam + c)
        step = lam - gap / slope if slope > 0 else math.nan
        if not lo < step < hi:
            step = (lo + hi) / 2
        if abs(step - lam) <= 4 * sys.float_info.epsilon * max(abs(lam), 1.0):
            return step
        lam = step
    return lam


@dataclass(frozen=True)
class _Design:
    """The settings every power result repeats."""

    alpha: float
    power: float
    sequential: bool
    tuning_n: float

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0 < self.power < 1:
            raise ValueError(f"power must be in (0, 1), got {self.power}")

    def critical_value(self, n_total: float) -> float:
        if self.sequential:
            return sequential_critical_value(n_total, self.alpha, self.tuning_n)
        return float(norm_isf(self.alpha / 2))

    def result(
        self,
        status: PowerStatus,
        message: str,
        mean: float | None,
        variance: float | None,
        *,
        mde_relative: float | None = None,
        mde_absolute: float | None = None,
        users: tuple[int, ...] | None = None,
        critical_value: float | None = None,
    ) -> PowerResult:
        return PowerResult(
            status=status,
            message=message,
            alpha=self.alpha,
            power=self.power,
            baseline_mean=mean,
            baseline_variance=variance,
            mde_relative=mde_relative,
            mde_absolute=mde_absolute,
            users_by_arm=users,
            total_users=sum(users) if users is not None else None,
            critical_value=critical_value,
            sequential=self.sequential,
            tuning_n=self.tuning_n if self.sequential else None,
        )

    def mde(
        self, se: float, n_total: int, baseline_mean: float
    ) -> tuple[float, float | None, float]:
        """(absolute MDE, relative MDE or None, critical value) for a standard error."""
        critical = self.critical_value(n_total)
        delta = _noncentrality(critical, self.power) * se
        return delta, (delta / abs(baseline_mean) if baseline_mean != 0 else None), critical


def _users(x: float) -> int:
    """Users needed, rounding up but not over float noise."""
    return math.ceil(x * (1 - 1e-14))


def _input_problem(
    mean: float, variance: float, *, relative: bool
) -> tuple[PowerStatus, str] | None:
    if not (math.isfinite(mean) and math.isfinite(variance)) or variance < 0:
        return "invalid_input", "the baseline mean and variance must be finite, variance ≥ 0"
    if variance == 0:
        return "zero_variance", "the baseline variance is 0: any lift is detected with 2 users"
    if relative and mean == 0:
        return "zero_baseline", "the baseline mean is 0: a relative lift is not defined"
    return None


def required_users(
    baseline_mean: float,
    baseline_variance: float,
    mde: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    n_arms: int = 2,
    weights: Sequence[float] | None = None,
    relative: bool = True,
    sequential: bool = False,
    tuning_n: float = DEFAULT_TUNING_N,
) -> PowerResult:
    """Users per arm so that a lift of ``mde`` (relative by default) is detected
    with probability ``power`` by a two-sided level-α test.

    ``weights`` are the traffic shares of the ``n_arms`` arms, control first
    (equal by default); the smallest treatment arm against control sets the
    size. With ``sequential=True`` the test is the confidence sequence tuned at
    ``tuning_n`` total users.
    """
    design = _Design(alpha, power, sequential, tuning_n)
    shares = [1.0] * n_arms if weights is None else [float(w) for w in weights]
    if n_arms < 2 or len(shares) != n_arms or any(not w > 0 for w in shares):
        raise ValueError("need n_arms ≥ 2 and one positive weight per arm")
    shares = [w / sum(shares) for w in shares]
    problem = _input_problem(baseline_mean, baseline_variance, relative=relative)
    if problem is None and not (math.isfinite(mde) and mde > 0):
        problem = ("invalid_input", "the minimum detectable effect must be > 0")
    if problem is not None:
        return design.result(*problem, baseline_mean, baseline_variance)
    delta = mde * abs(baseline_mean) if relative else mde
    w_c, w_t = shares[0], min(shares[1:])
    k = 1.0 / w_c + 1.0 / w_t  # Var(estimate) = σ²·k/N with N users in all arms

    def power_at(total: float) -> float:
        critical = design.critical_value(total * (w_c + w_t))
        return power_of_test(delta * math.sqrt(total / (baseline_variance * k)), critical)

    if sequential:
        upper = 1.0
        while power_at(upper) < power:
            upper *= 2
            if upper > _MAX_USERS:
                message = "more than 10¹³ users would be needed"
                return design.result("unreachable", message, baseline_mean, baseline_variance)
        total = float(_brentq(lambda x: power_at(x) - power, 1e-9, upper, xtol=1e-9))
    else:
        lam = _noncentrality(design.critical_value(1.0), power)
        total = (
            lam * lam * baseline_variance * k / (delta * delta) if delta * delta > 0 else math.inf
        )
        if not total <= _MAX_USERS:
            message = "more than 10¹³ users would be needed"
            return design.result("unreachable", message, baseline_mean, baseline_variance)
    return design.result(
        "ok",
        "",
        baseline_mean,
        baseline_variance,
        mde_relative=delta / abs(baseline_mean) if baseline_mean != 0 else None,
        mde_absolute=delta,
        users=tuple(max(_users(total * w), 2) for w in shares),
        critical_value=design.critical_value(total * (w_c + w_t)),
    )


def minimum_detectable_effect(
    n_per_arm: int,
    baseline_mean: float,
    baseline_variance: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    n_treatment: int | None = None,
    sequential: bool = False,
    tuning_n: float = DEFAULT_TUNING_N,
) -> PowerResult:
    """The smallest lift detected with probability ``power`` with ``n_per_arm``
    users in control (and ``n_treatment`` in treatment, the same by default)."""
    design = _Design(alpha, power, sequential, tuning_n)
    n_c = int(n_per_arm)
    n_t = n_c if n_treatment is None else int(n_treatment)
    problem = _input_problem(baseline_mean, baseline_variance, relative=False)
    if problem is None and min(n_c, n_t) < 2:
        problem = ("invalid_input", "each arm needs at least 2 users")
    if problem is not None:
        return design.result(*problem, baseline_mean, baseline_variance, users=(n_c, n_t))
    se = math.sqrt(baseline_variance * (1.0 / n_c + 1.0 / n_t))
    delta, rel, critical = design.mde(se, n_c + n_t, baseline_mean)
    return design.result(
        "ok" if rel is not None else "zero_baseline",
        "" if rel is not None else "the baseline mean is 0: no relative MDE",
        baseline_mean,
        baseline_variance,
        mde_relative=rel,
        mde_absolute=delta,
        users=(n_c, n_t),
        critical_value=critical,
    )


def detectable_effect(
    control: ArmStats,
    treatment: ArmStats,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    sequential: bool = False,
    tuning_n: float = DEFAULT_TUNING_N,
) -> PowerResult:
    """Post hoc: the lift this experiment could detect with probability ``power``.

    :func:`minimum_detectable_effect` with the experiment's own arm sizes and
    the control arm's mean and per-user variance (delta-method variance for a
    ratio; CUPED-adjusted with the pooled θ when CUPED applies). This is the
    design's sensitivity, not the "observed power" at the observed effect, which
    is a function of the p-value and says nothing new (Hoenig and Heisey 2001).
    """
    design = _Design(alpha, power, sequential, tuning_n)
    m = effect_moments(control, treatment)
    users = (m.control_n, m.treatment_n)
    if m.control_mean is None or m.status in ("too_few_users", "zero_denominator"):
        return design.result(m.status, m.message, m.control_mean, None, users=users)
    variance = arm_moments(control).adjusted_variance(m.theta or 0.0)
    return minimum_detectable_effect(
        users[0],
        m.control_mean,
        variance,
        alpha=alpha,
        power=power,
        n_treatment=users[1],
        sequential=sequential,
        tuning_n=tuning_n,
    )


def _brentq(f: Callable[[float], float], a: float, b: float, **kwargs: Any) -> float:
    """scipy.optimize.brentq, imported on first use (it is slow to import)."""
    from scipy import optimize

    return float(optimize.brentq(f, a, b, **kwargs))
