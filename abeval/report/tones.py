"""Which colour a result gets on the HTML pages, and the metric direction it needs.

A row is coloured only when its result is significant: ``good`` when the effect
goes the metric's good way, ``bad`` when it goes the other way, ``""`` (no
colour) otherwise. The direction is a fact of the metric's definition
(``lower_is_better``): the metric catalog a result carries
(:class:`abeval.analysis.online_metrics.Catalog`) for the online metrics,
:mod:`abeval.metrics` for the offline ones; nothing here keeps a list of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from abeval.metrics.registry import offline_lower_is_better

__all__ = [
    "AGREEMENT_STATES",
    "Tone",
    "excludes_zero",
    "offline_lower_is_better",
    "tone",
]

Tone = Literal["good", "bad", ""]

#: The state pill (kind, text) of an agreement between a predicted and an online
#: lift (off-policy estimates, recorded evaluations).
AGREEMENT_STATES = {
    "agree": ("pass", "✓ agrees"),
    "disagree": ("fail", "✗ disagrees"),
    "inconclusive": ("info", "inconclusive"),
}


def tone(significant: bool, effect: float | None, lower_is_better: bool) -> Tone:
    """``good`` or ``bad`` for a significant, non-zero ``effect`` (by the metric's
    direction), ``""`` for anything else."""
    if not significant or effect is None or effect == 0:
        return ""
    better = effect < 0 if lower_is_better else effect > 0
    return "good" if better else "bad"


def excludes_zero(ci: Sequence[float] | None) -> bool:
    """True when the interval ``ci`` lies wholly above or below zero."""
    return ci is not None and (ci[0] > 0 or ci[1] < 0)
