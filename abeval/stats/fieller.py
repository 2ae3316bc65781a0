"""The relative lift's interval by Fieller's theorem, consistent with the test.

The relative lift is ρ = D/|B| with D the absolute lift (the one the test is
about) and B the control mean. The delta method gives ρ̂ ± c·se(ρ̂), an
interval that ignores how uncertain B is beyond first order: on a skewed metric
with few buyers it over-rejects and can run below −100%. Fieller (1954) instead
inverts the test of D − r·B = 0 for every r: r is in the 1 − α set when::

    (D − r·B)² ≤ c²·(V_D − 2r·C + r²·V_B)

with V_D = Var(D), V_B = Var(B), C = Cov(D, B) and c the test's critical value
(Student t with the Welch dof, normal, or the confidence sequence's c(n)).
At r = 0 this is D² ≤ c²·V_D, the absolute test: the set excludes 0 exactly
when the absolute p-value is below α. As a quadratic a·r² − 2b·r + k ≤ 0::

    a = B² − c²·V_B,   b = D·B − c²·C,   k = D² − c²·V_D

When a > 0 (the control mean is significantly different from 0 at this level)
the set is the bounded interval (b ± sqrt(b² − a·k))/a. Otherwise it is the
whole line or two rays, reported as ``unbounded``. For a metric that cannot be
negative the lower end is clipped at −100%. See docs/metrics.md#relative-lift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from abeval.stats.results import FiellerTerms

IntervalStatus = Literal["bounded", "clipped", "unbounded"]

UNBOUNDED = (
    "relative interval unbounded: the control mean cannot be told from 0 at this level "
    "(Fieller); the absolute interval and the p-value still hold"
)
CLIPPED = "lower end clipped at -100%: the metric cannot be negative"


@dataclass(frozen=True)
class FiellerInterval:
    """The relative interval (None when unbounded), its status and a sentence."""

    ci: tuple[float, float] | None
    status: IntervalStatus
    message: str


def fieller_interval(terms: FiellerTerms, critical: float) -> FiellerInterval:
    """The Fieller set for D/|B| at critical value ``critical`` (module doc)."""
    d, b = terms.numerator, terms.denominator
    c2 = critical * critical
    qa = b * b - c2 * terms.denominator_variance
    qb = d * b - c2 * terms.covariance
    qk = d * d - c2 * terms.numerator_variance
    if not qa > 0:
        return FiellerInterval(None, "unbounded", UNBOUNDED)
    # ρ̂ = D/B is always in the set, so the discriminant is ≥ 0 up to rounding
    root = math.sqrt(max(qb * qb - qa * qk, 0.0))
    low, high = (qb - root) / qa, (qb + root) / qa
    if b < 0:  # the lift divides by |B|: the set for D/|B| is that of D/B mirrored
        low, high = -high, -low
    if terms.nonnegative and low < -1.0:
        return FiellerInterval((-1.0, max(high, -1.0)), "clipped", CLIPPED)
    return FiellerInterval((low, high), "bounded", "")
