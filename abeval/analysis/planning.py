"""Power from the data: what an experiment can detect and what a target lift needs,
planned from the experiment's own control baseline and per-user variances.

One function makes each row, for the report's power section and for
``abeval power --experiment`` alike, so the two always agree. The statistics are
those of the report's main comparison: a ratio metric's per-user variance by the
delta method, and with CUPED (when the pre-period helps) the CUPED-adjusted
variance, so the plan credits the variance CUPED removes
(docs/metrics.md#power-and-mde).

Power and MDE are planned at the α the decision uses after the multiple-testing
correction: with m comparisons in a family (primary metrics × treatment arms),
at α/m, the smallest step of Holm's procedure and of Benjamini-Hochberg's: a
single real effect among m must beat it to be declared, whatever the others do
(:func:`planning_alpha`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from abeval.analysis.report_model import GuardrailPower, PowerInfo, ReportOptions
from abeval.stats import detectable_effect, effect_moments, required_users
from abeval.stats.moments import arm_moments
from abeval.stats.sufficient import ArmStats

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.engine import Store

#: A test that needs more days than this is reported as not feasible.
FEASIBLE_DAYS = 365.0


def baseline(control: ArmStats, treatment: ArmStats) -> tuple[float, float]:
    """The control mean and the per-user variance the test works with: the
    delta-method variance for a ratio, CUPED-adjusted with the pooled θ."""
    m = effect_moments(control, treatment)
    mean = m.control_mean if m.control_mean is not None else 0.0
    return mean, arm_moments(control).adjusted_variance(m.theta or 0.0)


def planning_alpha(alpha: float, comparisons: int) -> float:
    """The α a family of ``comparisons`` tests is planned at: α/m (module docstring)."""
    return alpha / max(comparisons, 1)


def planning_rule(correction: str, comparisons: int) -> str:
    """Which step :func:`planning_alpha` took: ``single_test`` or ``<correction>_smallest_step``."""
    return "single_test" if comparisons <= 1 else f"{correction}_smallest_step"


def power_info(
    metric: str,
    arm: str,
    stats: tuple[ArmStats, ArmStats],
    n_arms: int,
    users_per_day: float | None,
    o: ReportOptions,
    family: int = 1,
) -> PowerInfo:
    """One metric and treatment arm: the lift detectable now, the users a lift of
    ``o.target_mde`` needs, and the days more that would take at the current
    traffic (``feasible`` is False beyond :data:`FEASIBLE_DAYS`); planned at
    the α of a family of ``family`` comparisons (:func:`planning_alpha`)."""
    c, t = stats
    alpha = planning_alpha(o.alpha, family)
    design = {"alpha": alpha, "power": o.power, "sequential": o.sequential}
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


def guardrail_power(
    metric: str,
    arm: str,
    stats: tuple[ArmStats, ArmStats],
    n_arms: int,
    planned: tuple[int | None, str],
    o: ReportOptions,
    family: int = 1,
) -> GuardrailPower | None:
    """Whether a guardrail with a margin can be shown non-inferior at the planned
    size: the users for which, with no true change, its interval's worse end stays
    within the margin with probability ``o.power`` at the guardrails' planning α
    (the two-sided power of a lift equal to the margin: its far tail is negligible
    at any useful power). None when the guardrail has no margin."""
    margin = o.margin(metric)
    if margin is None:
        return None
    mean, variance = baseline(*stats)
    needed = required_users(
        mean,
        variance,
        margin,
        alpha=planning_alpha(o.alpha, family),
        power=o.power,
        n_arms=n_arms,
        sequential=o.sequential,
        tuning_n=o.tuning_n,
    )
    users, rule = planned
    enough = None
    if users is not None and needed.total_users is not None:
        enough = needed.total_users <= users
    elif needed.status == "unreachable":
        enough = False
    return GuardrailPower(
        metric=metric,
        arm=arm,
        margin=margin,
        needed=needed,
        planned_users=users,
        planned_rule=rule,
        enough=enough,
    )


def plan_from_data(
    store: Store, experiment: str, metrics: tuple[str, ...], o: ReportOptions
) -> tuple[PowerInfo, ...]:
    """The power rows of ``metrics`` for ``experiment``, exactly as its report
    (under the same options) shows them for its primary metrics: from the
    experiment's session, without the replay or the off-policy estimates."""
    return plan_report(store, experiment, replace(o, primary=metrics)).power


@dataclass(frozen=True)
class Plan:
    """What ``abeval power --experiment`` prints: the power rows of the primary
    metrics, the guardrails' non-inferiority plan, and the options they were
    planned under (the saved configuration applied when the options read it)."""

    power: tuple[PowerInfo, ...]
    guardrails: tuple[GuardrailPower, ...]
    options: ReportOptions
    planning_alpha: float
    planning_rule: str
    #: The store's metrics it was planned with (their labels, for its presenters).
    catalog: Catalog = field(repr=False, compare=False)


def plan_report(
    store: Store, experiment: str, o: ReportOptions, catalog: Catalog | None = None
) -> Plan:
    """The :class:`Plan` of ``experiment`` under ``o``, from its session
    (``catalog``: the store's metrics when read already)."""
    from abeval.analysis.session import ExperimentSession

    with ExperimentSession(store, experiment, replace(o, offline=False), catalog) as session:
        power, guardrails, options = session.power, session.guardrail_power, session.options
        family = len(options.primary) * len(session.treatments)
        catalog = session.catalog
    return Plan(
        power=power,
        guardrails=guardrails,
        options=options,
        planning_alpha=planning_alpha(options.alpha, family),
        planning_rule=planning_rule(options.correction, family),
        catalog=catalog,
    )
