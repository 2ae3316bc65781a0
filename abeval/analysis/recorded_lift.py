"""The lift a recorded offline evaluation predicted for an arm, relative to the
experiment's control (docs/metrics.md#recorded-evaluations).

A recorded treatment row carries the paired mean difference ``d`` against the
control's model and its interval; the relative lift is ``d / m_C`` with ``m_C``
the control model's value, and its interval is the difference's interval scaled
by ``1 / m_C``. That is the delta method for the ratio of the two paired means
evaluated at a ratio of 1 (the control's own sampling error enters through the
paired difference): the report and ``abeval agreement`` both read a recorded
evaluation through this one function.
"""

from __future__ import annotations

from abeval.stats.ope import Interval
from abeval.store.evaluations import RecordedEvaluation


def recorded_lift(evaluation: RecordedEvaluation, arm: str, metric: str) -> Interval | None:
    """Relative lift of ``arm``'s model over the control's on ``metric``; None when
    the evaluation has no such row or ``arm`` is the baseline itself."""
    row = evaluation.metric(arm, metric)
    if row is None or row.baseline_arm is None:
        return None
    base = evaluation.metric(row.baseline_arm, metric)
    if base is None or base.value is None or row.difference is None:
        return Interval(None, None, None, "no_data", f"{metric} is undefined for a model")
    if base.value == 0:
        return Interval(None, None, None, "zero_baseline", f"the control model's {metric} is 0")
    lift = row.difference / base.value
    if row.difference_low is None or row.difference_high is None:
        return Interval(lift, None, None, "too_few_users", "no interval: too few paired users")
    low, high = sorted((row.difference_low / base.value, row.difference_high / base.value))
    se = None if row.difference_se is None else row.difference_se / abs(base.value)
    return Interval(lift, se, (low, high), "ok", "")
