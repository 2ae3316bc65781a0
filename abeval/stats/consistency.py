"""Is a predicted lift consistent with the observed one, within their errors?
(docs/metrics.md#predicted-against-observed)

The difference d = predicted − observed of two relative lifts of the same
quantity, with standard error √(se_pred² + se_obs²) as if they were
independent, its normal 1 − α interval and z = d / se. The two are
*consistent* at α when the interval holds 0 (|z| < z_{1−α/2}), else
*inconsistent*. An off-policy prediction and the online lift share the source
arm's observed CTR as their baseline; that positive covariance makes the true
variance of d smaller than this sum, so the interval is conservative (wider).

:func:`z_scores` summarises many such pairs: the mean of z (0 for a predictor
without bias, in units of its stated error) and the share with |z| < 1.96
(about 95% for a predictor whose stated errors are right).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from abeval.stats.distributions import norm_isf
from abeval.stats.results import JsonResult

Consistency = Literal["consistent", "inconsistent"]
DifferenceStatus = Literal["ok", "no_value", "no_se"]
#: The |z| below which a pair counts as within its stated error (95%, two-sided).
Z_WITHIN = 1.96


@dataclass(frozen=True)
class LiftDifference(JsonResult):
    """predicted − observed, its standard error, 1 − α interval and z; the verdict
    (None when undefined, with ``status`` and ``message`` saying why)."""

    difference: float | None
    se: float | None
    ci: tuple[float, float] | None
    z: float | None
    verdict: Consistency | None
    alpha: float
    status: DifferenceStatus
    message: str


def lift_difference(
    predicted: float | None,
    predicted_se: float | None,
    observed: float | None,
    observed_se: float | None,
    alpha: float,
) -> LiftDifference:
    """The difference of a predicted and an observed lift (module docstring)."""
    if predicted is None or observed is None:
        return LiftDifference(None, None, None, None, None, alpha, "no_value", "a lift is missing")
    d = predicted - observed
    if predicted_se is None or observed_se is None:
        return LiftDifference(d, None, None, None, None, alpha, "no_se", "a lift has no error")
    se = math.sqrt(predicted_se**2 + observed_se**2)
    if not se > 0 or not math.isfinite(se):
        return LiftDifference(d, None, None, None, None, alpha, "no_se", "the error is 0")
    crit = norm_isf(alpha / 2)
    z = d / se
    verdict: Consistency = "consistent" if abs(z) < crit else "inconsistent"
    return LiftDifference(d, se, (d - crit * se, d + crit * se), z, verdict, alpha, "ok", "")


@dataclass(frozen=True)
class ZSummary(JsonResult):
    """Over the pairs with a z: how many, the mean of z, the share with |z| < 1.96."""

    pairs: int
    z_mean: float | None
    z_within: float | None


def z_scores(zs: Sequence[float | None]) -> ZSummary:
    """:class:`ZSummary` of the defined values of ``zs``."""
    found = [z for z in zs if z is not None and math.isfinite(z)]
    if not found:
        return ZSummary(0, None, None)
    within = sum(1 for z in found if abs(z) < Z_WITHIN)
    return ZSummary(len(found), sum(found) / len(found), within / len(found))
