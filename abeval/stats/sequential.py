"""Always-valid confidence sequences: the asymptotic normal-mixture bound.

An experiment that is looked at every day and stopped at the first significant
look rejects a true null far more often than α with fixed-horizon intervals.
A *confidence sequence* covers the true effect at every sample size at once
with probability 1 − α, so it may be monitored continuously.

The bound (Howard, Ramdas, McAuliffe and Sekhon 2021, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", eq. (14); in its asymptotic
form Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas 2023, "Time-uniform central
limit theory and asymptotic confidence sequences", arXiv:2103.06476, eq. (9))
mixes the Gaussian martingale exp(λSₙ − λ²n/2) over λ ~ N(0, ρ²)::

    Mₙ = exp(ρ²Sₙ² / (2(nρ² + 1))) / sqrt(nρ² + 1),

where Sₙ is the sum of n standardised observations. Ville's inequality gives
P(∃n: Mₙ ≥ 1/α) ≤ α, and Mₙ < 1/α solved for the mean gives the half-width::

    halfwidth = σ · sqrt( 2(nρ² + 1) / (n²ρ²) · ln( sqrt(nρ² + 1) / α ) )

with σ² the per-observation variance. For a difference of two arms with
standard error se and n = n_T + n_C users in the comparison, σ² = se²·n (as
GrowthBook's gbstats and Eppo do), so halfwidth = se · c(n) with
``c(n) = sqrt(2(nρ² + 1)/(nρ²) · ln(sqrt(nρ² + 1)/α))``.
The always-valid p-value is min(1, 1/Mₙ) with Sₙ² = n·z², z = estimate/se: it is
below α exactly when the confidence sequence excludes 0.

Choosing the tuning sample size N: ρ is set so that the bound is (very nearly)
tightest when n = N users (both arms of the comparison together). Set N to the
total users you expect at the look where a decision matters most, typically the
planned sample size from :func:`abeval.stats.required_users`, or somewhat less
if early stopping is likely. A wrong guess costs width through ρ: at α = 0.05
and N = 5 000, the half-width is 7% wider than the best achievable at
n = 50 000 and 17% wider at n = 500 000, but 27% wider at n = 500, so a guess on
the small side is the cheaper mistake. At its best the sequence is about 1.55
times as wide as the fixed-horizon interval (c = 3.04 against z = 1.96 at
α = 0.05): the price of being allowed to peek. GrowthBook's default N is 5 000;
abeval uses the same.
"""

from __future__ import annotations

import math

#: Default tuning sample size (total users in the comparison), as in gbstats.
DEFAULT_TUNING_N = 5000.0


def _check(alpha: float, tuning_n: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not tuning_n > 0 or not math.isfinite(tuning_n):
        raise ValueError(f"the sequential tuning sample size must be positive, got {tuning_n}")


def sequential_rho(alpha: float, tuning_n: float = DEFAULT_TUNING_N) -> float:
    """Mixing scale ρ that makes the two-sided bound tightest near n = ``tuning_n``.

    Minimising the half-width over ρ at n = N means solving u − ln u = 1 − 2 ln α
    for u = Nρ² + 1; one fixed-point step from u = 1 − 2 ln α gives
    ``ρ = sqrt((−2 ln α + ln(1 − 2 ln α)) / N)`` (Waudby-Smith et al. 2023,
    arXiv:2103.06476, eq. (161)).
    """
    _check(alpha, tuning_n)
    minus_two_log_alpha = -2.0 * math.log(alpha)
    return math.sqrt((minus_two_log_alpha + math.log(minus_two_log_alpha + 1.0)) / tuning_n)


def sequential_critical_value(
    n: float,
    alpha: float = 0.05,
    tuning_n: float = DEFAULT_TUNING_N,
    *,
    rho: float | None = None,
) -> float:
    """The multiple of the standard error that the confidence sequence spans at n
    users: c(n) = sqrt(2(nρ² + 1)/(nρ²) · ln(sqrt(nρ² + 1)/α)). Larger than
    z₁₋α/₂ at every n. ``rho`` overrides the ρ tuned for (α, N): any fixed ρ
    gives a valid sequence (used to keep adjusted intervals consistent with
    p-values computed at the unadjusted α)."""
    if not n > 0:
        raise ValueError(f"the sample size must be positive, got {n}")
    rho = sequential_rho(alpha, tuning_n) if rho is None else rho
    r2 = n * rho * rho
    return math.sqrt(2.0 * (r2 + 1.0) / r2 * math.log(math.sqrt(r2 + 1.0) / alpha))


def sequential_halfwidth(
    se: float,
    n: float,
    alpha: float = 0.05,
    tuning_n: float = DEFAULT_TUNING_N,
    *,
    rho: float | None = None,
) -> float:
    """Half-width of the 1 − α confidence sequence for an estimate with standard
    error ``se`` after ``n`` users (both arms together)."""
    return se * sequential_critical_value(n, alpha, tuning_n, rho=rho)


def sequential_p_value(
    z: float, n: float, alpha: float = 0.05, tuning_n: float = DEFAULT_TUNING_N
) -> float:
    """Always-valid two-sided p-value min(1, 1/Mₙ) for z = estimate/se after n users.

    ``alpha`` enters only through ρ (the mixture is tuned for that level), as in
    gbstats: p < α exactly when the 1 − α confidence sequence excludes 0.
    """
    if not n > 0:
        raise ValueError(f"the sample size must be positive, got {n}")
    rho = sequential_rho(alpha, tuning_n)
    r2 = n * rho * rho
    log_m = r2 * z * z / (2.0 * (r2 + 1.0)) - 0.5 * math.log(r2 + 1.0)
    return 1.0 if log_m <= 0 else math.exp(-log_m)
