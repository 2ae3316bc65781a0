"""Power from the data: what an experiment can detect and what a target lift needs,
planned from the experiment's own control baseline and per-user variances.

One function makes each row, for the report's power section and for
``abeval power --experiment`` alike, so the two always agree. The statistics are
those of the report's main comparison: a ratio metric's per-user variance by the
delta method, and with CUPED (when the pre-period helps) the CUPED-adjusted
variance, so the plan credits the variance CUPED removes
(docs/metrics.md#power-and-mde).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from abeval.analysis.report_model import PowerInfo, ReportOptions
from abeval.stats import detectable_effect, effect_moments, required_users
from abeval.stats.moments import arm_moments
from abeval.stats.sufficient import ArmStats

if TYPE_CHECKING:
    from abeval.store.engine import Store

#: A test that needs more days than this is reported as not feasible.
FEASIBLE_DAYS = 365.0


def baseline(control: ArmStats, treatment: ArmStats) -> tuple[float, float]:
    """The control mean and the per-user variance the test works with: the
    delta-method variance for a ratio, CUPED-adjusted with the pooled θ."""
    m = effect_moments(control, treatment)
    mean = m.control_mean if m.control_mean is not None else 0.0
    return mean, arm_moments(control).adjusted_variance(m.theta or 0.0)


def power_info(
    metric: str,
    arm: str,
    stats: tuple[ArmStats, ArmStats],
    n_arms: int,
    users_per_day: float | None,
    o: ReportOptions,
) -> PowerInfo:
    """One metric and treatment arm: the lift detectable now, the users a lift of
    ``o.target_mde`` needs, and the days more that would take at the current
    traffic (``feasible`` is False beyond :data:`FEASIBLE_DAYS`)."""
    c, t = stats
    design = {"alpha": o.alpha, "power": o.power, "sequential": o.sequential}
    detectable = detectable_effect(c, t, tuning_n=o.tuning_n, **design)  # type: ignore[arg-type]
    mean, variance = baseline(c, t)
    needed = required_users(
        mean,
        variance,
        o.target_mde,
        n_arms=n_arms,
        tuning_n=o.tuning_n,
        **design,  # type: ignore[arg-type]
    )
    more_days = None
    if needed.total_users is not None and users_per_day:
        current = (c.n + t.n) * n_arms / 2
        more_days = max(0.0, (needed.total_users - current) / users_per_day)
    return PowerInfo(
        metric=metric,
        arm=arm,
        detectable=detectable,
        needed_for_target=needed,
        users_per_day=users_per_day,
        more_days_needed=more_days,
        feasible=more_days is None or more_days <= FEASIBLE_DAYS,
    )


def plan_from_data(
    store: Store, experiment: str, metrics: tuple[str, ...], o: ReportOptions
) -> tuple[PowerInfo, ...]:
    """The power rows of ``metrics`` for ``experiment``, exactly as its report
    (under the same options) shows them for its primary metrics: from the
    experiment's session, without the replay or the off-policy estimates."""
    from abeval.analysis.session import ExperimentSession

    options = replace(o, primary=metrics, offline=False)
    with ExperimentSession(store, experiment, options) as session:
        return session.power
