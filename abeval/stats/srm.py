"""Sample-ratio mismatch (SRM): are users split across arms as configured?

Pearson's χ² goodness-of-fit test (Pearson 1900): with observed users oᵢ and
expected eᵢ = N·wᵢ/Σw for configured weights w (equal by default)::

    χ² = Σ (oᵢ − eᵢ)² / eᵢ,   k − 1 degrees of freedom,   p = P(χ²ₖ₋₁ ≥ χ²)

A mismatch means the assignment or the logging is broken and the comparison
between arms is not to be trusted. It is flagged at p < 0.001 by default: the
check runs on every experiment, so a strict threshold keeps false alarms rare
(Fabijan et al. 2019, "Diagnosing sample ratio mismatch in online controlled
experiments"), and real SRMs in large experiments give far smaller p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from abeval.stats.distributions import chi2_sf
from abeval.stats.results import SrmResult

DEFAULT_SRM_THRESHOLD = 0.001


def srm_test(
    users: Sequence[int],
    weights: Sequence[float] | None = None,
    *,
    threshold: float = DEFAULT_SRM_THRESHOLD,
) -> SrmResult:
    """Pearson χ² of ``users`` per arm against ``weights`` (equal when None).

    Weights need not sum to 1. An arm with users but a weight of 0 (an arm
    outside the recorded split) is a mismatch for certain: p = 0, flagged.
    Weights that give no expected counts (negative, not finite, all 0) are
    flagged too, with status ``invalid_input``: the check cannot pass. Fewer
    than two arms or no users at all give a status instead of a p-value.
    """
    if weights is not None and len(weights) != len(users):
        raise ValueError(f"{len(users)} arms but {len(weights)} weights")
    observed = tuple(int(u) for u in users)
    w = [1.0] * len(observed) if weights is None else [float(x) for x in weights]

    base = SrmResult(
        status="ok",
        message="",
        users=observed,
        expected=None,
        statistic=None,
        dof=None,
        p_value=None,
        threshold=threshold,
        flagged=False,
    )
    if any(u < 0 for u in observed):
        return replace(base, status="invalid_input", message="user counts must be ≥ 0")
    if any(not (math.isfinite(x) and x >= 0) for x in w) or (w and not any(x > 0 for x in w)):
        return replace(
            base,
            status="invalid_input",
            message="the expected split has weights that are not finite and ≥ 0; record it again",
            flagged=True,
        )
    if len(observed) < 2:
        return replace(base, status="single_arm", message="the test needs at least two arms")
    total = sum(observed)
    if total == 0:
        return replace(base, status="no_users", message="no users in any arm")
    top = max(w)
    shares = [x / top for x in w]  # no overflow nor underflow of the sum
    expected = tuple(total * x / sum(shares) for x in shares)
    outside = [i for i, (o, e) in enumerate(zip(observed, expected, strict=True)) if o and not e]
    if outside:
        return replace(
            base,
            message=f"sample ratio mismatch: {sum(observed[i] for i in outside):,} users in "
            "arms the expected split gives no share (p = 0)",
            expected=expected,
            dof=len(observed) - 1,
            p_value=0.0,
            flagged=True,
        )
    tested = [(o, e) for o, e in zip(observed, expected, strict=True) if e]
    if len(tested) < 2:
        return replace(base, status="single_arm", message="the test needs at least two arms")
    statistic = sum((o - e) ** 2 / e for o, e in tested)
    dof = len(tested) - 1
    p = float(chi2_sf(statistic, dof))
    flagged = p < threshold
    return replace(
        base,
        message=f"sample ratio mismatch: p = {p:.3g} < {threshold:g}" if flagged else "",
        expected=expected,
        statistic=statistic,
        dof=dof,
        p_value=p,
        flagged=flagged,
    )
