"""CUPED: variance reduction with the pre-period value of the same metric.

Deng, Xu, Kohavi and Walker (2013), "Improving the sensitivity of online
controlled experiments by utilizing pre-experiment data". Each user's metric y
is replaced by y − θ·x, with x the same metric over the pre-period (before the
user's first exposure, so that the treatment cannot have moved it). With

    θ = cov(y, x) / var(x)

estimated once on both arms pooled (so the same θ applies to both arms and the
adjusted difference stays unbiased), the variance of each arm's mean shrinks
by the factor 1 − corr(y, x)². Per arm::

    adjusted mean      ȳ − θ·x̄
    adjusted variance  var(y) + θ²·var(x) − 2θ·cov(y, x)

For a ratio metric R = Σm/Σd the same is done on the linearised per-user
values l = (m − R·d)/μd and l' = (m' − R'·d')/μd' of the post and pre ratios
(the delta method; Deng, Knoblich and Lu 2018): y is the ratio R, x the pre
ratio R', var and cov are those of l and l'.

The relative lift divides the adjusted difference by the *unadjusted* control
mean, and its delta-method variance follows gbstats
(``frequentist_variance_relative_cuped``)::

    var_rel = vT_adj / (nT·ȳC²)
            + (var(yC)·ȳT²/ȳC² − 2θ·cov_C(y, x)·ȳT/ȳC + θ²·var(xC)) / (nC·ȳC²)

This is the delta method for (adjT − adjC)/ȳC with the control-side gradient
evaluated at −ȳT/ȳC² instead of −(ȳT − θ(x̄T − x̄C))/ȳC²; the two agree
asymptotically (x̄T − x̄C → 0 under randomisation) and the former is what
``tests/stats/data/gbstats_reference.json`` checks (docs/metrics.md#cuped).

When the pooled covariate has no variance (a new metric, no pre-period data),
θ is undefined and the comparison falls back to the unadjusted estimate, noted
in the result's message.
"""

from __future__ import annotations

from abeval.stats.sufficient import CupedStats, RatioCupedStats


def cuped_theta(
    control: CupedStats | RatioCupedStats, treatment: CupedStats | RatioCupedStats
) -> float | None:
    """θ = cov(y, x) / var(x) over both arms pooled; None when var(x) = 0.

    The pooled statistics are ``control + treatment`` (exact merge), so θ is the
    least-squares slope of post on pre over all users of the comparison.
    """
    pooled = control + treatment  # type: ignore[operator]
    var_x = pooled.pre.variance
    if pooled.n < 2 or not var_x > 0:
        return None
    return float(pooled.covariance / var_x)


def variance_reduction(unadjusted: float, adjusted: float) -> float | None:
    """Share of the variance of the estimate removed by CUPED: 1 − adjusted/unadjusted."""
    if not unadjusted > 0:
        return None
    return 1.0 - adjusted / unadjusted
