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

    Weights need not sum to 1. Fewer than two arms, no users at all, negative
    counts or non-positive weights give a status instead of a p-value.
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
    if any(u < 0 for u in observed) or any(not (math.isfinite(x) and x > 0) for x in w):
        return replace(base, status="invalid_input", message="user counts must be ≥ 0, weights > 0")
    if len(observed) < 2:
        return replace(base, status="single_arm", message="the test needs at least two arms")
    total = sum(observed)
    if total == 0:
        return replace(base, status="no_users", message="no users in any arm")
    expected = tuple(total * x / sum(w) for x in w)
    statistic = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    dof = len(observed) - 1
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
