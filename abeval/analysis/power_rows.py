"""Power from the data: what an experiment can detect and what a target lift needs,
planned from the experiment's own control baseline and per-user variances; the
report's power rows (:func:`power_rows`) and the guardrails' non-inferiority plan
(:func:`guardrail_powers`).

One function makes each row, for the report's power section and for
``abeval power --experiment`` (:mod:`abeval.analysis.planning`) alike, so the two
always agree. The statistics are those of the report's main comparison: a ratio
metric's per-user variance by the delta method, and with CUPED (when the
pre-period helps) the CUPED-adjusted variance, so the plan credits the variance
CUPED removes (docs/metrics.md#power-and-mde).

Power and MDE are planned at the α the decision uses after the multiple-testing
correction: with m comparisons in a family (primary metrics × treatment arms),
at α/m, the smallest step of Holm's procedure and of Benjamini-Hochberg's: a
single real effect among m must beat it to be declared, whatever the others do
(:func:`planning_alpha`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from abeval.analysis.comparisons import PlainStats
from abeval.analysis.report_model import GuardrailPower, PowerInfo, ReportOptions
from abeval.choices import FEASIBLE_DAYS
from abeval.stats import detectable_effect, effect_moments, required_users
from abeval.stats.moments import arm_moments
from abeval.stats.sufficient import ArmStats
from abeval.store.sql.online_sums import Daily

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog


def baseline(control: ArmStats, treatment: ArmStats) -> tuple[float, float]:
    """The control mean and the per-user variance the test works with: the
    delta-method variance for a ratio, CUPED-adjusted with the pooled θ."""
    m = effect_moments(control, treatment)
    mean = m.control_mean if m.control_mean is not None else 0.0
    return mean, arm_moments(control).adjusted_variance(m.theta or 0.0)


def planning_alpha(alpha: float, comparisons: int) -> float:
    """The α a family of ``comparisons`` tests is planned at: α/m (module docstring)."""
    return alpha / max(comparisons, 1)


def guardrail_planning_power(power: float, guardrails: int) -> float:
    """The power each of ``guardrails`` comparisons is planned at so that all of them
    at once reach ``power``: 1 − (1 − power)/g, the misses shared out as Bonferroni
    shares out α (Schultzberg, Ankargren and Frånberg 2024, as Spotify's Confidence
    plans guardrails: a ship needs every guardrail shown non-inferior)."""
    return 1.0 - (1.0 - power) / max(guardrails, 1)


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
    traffic (``feasible`` is False beyond :data:`abeval.choices.FEASIBLE_DAYS`); planned at
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
    row = PowerInfo(
        metric=metric,
        arm=arm,
        detectable=detectable,
        needed_for_target=needed,
        users_per_day=users_per_day,
        more_days_needed=more_days,
        feasible=more_days is None or more_days <= FEASIBLE_DAYS,
    )
    if o.sequential or o.plan_users is not None or o.plan_days is not None or not row.feasible:
        return row
    return with_looks(row, alpha, o.power)


def with_looks(row: PowerInfo, alpha: float, power: float) -> PowerInfo:
    """``row`` with its power under the default basis: group-sequential spending of
    ``alpha`` over a look a day up to the users the target needs
    (:mod:`abeval.stats.spending_power`): the chance of crossing a boundary by then,
    and the users for which it is ``power`` (the fixed test's, inflated)."""
    from abeval.stats.power import _noncentrality
    from abeval.stats.spending_power import (
        daily_fractions,
        planned_looks,
        spending_noncentrality,
        spending_power,
    )

    need = row.needed_for_target
    if need.status != "ok" or need.total_users is None or need.critical_value is None:
        return row
    looks = planned_looks(need.total_users, row.users_per_day)
    fractions = daily_fractions(looks)
    fixed = _noncentrality(need.critical_value, power)
    inflation = (spending_noncentrality(fractions, power, alpha) / fixed) ** 2
    return replace(
        row,
        looks=looks,
        power_with_looks=spending_power(fractions, fixed, alpha),
        users_with_looks=math.ceil(need.total_users * inflation),
    )


def guardrail_power(
    metric: str,
    arm: str,
    stats: tuple[ArmStats, ArmStats],
    n_arms: int,
    planned: tuple[int | None, str],
    o: ReportOptions,
    family: int = 1,
    powered: int = 1,
) -> GuardrailPower | None:
    """Whether a guardrail with a margin can be shown non-inferior at the planned
    size: the users for which, with no true change, its interval's worse end stays
    within the margin at the guardrails' planning α (the two-sided power of a lift
    equal to the margin: its far tail is negligible at any useful power) with the
    power that gives ``o.power`` to all ``powered`` guardrail comparisons with a
    margin at once (:func:`guardrail_planning_power`). None when the guardrail has
    no margin."""
    margin = o.margin(metric)
    if margin is None:
        return None
    mean, variance = baseline(*stats)
    needed = required_users(
        mean,
        variance,
        margin,
        alpha=planning_alpha(o.alpha, family),
        power=guardrail_planning_power(o.power, powered),
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


def power_rows(
    plain: PlainStats,
    daily: Daily,
    control: str,
    treatments: list[str],
    o: ReportOptions,
) -> tuple[PowerInfo, ...]:
    """The power rows of the primary metrics per treatment arm, at the average
    daily traffic of the daily series so far."""
    users_per_day = None
    if daily:
        last = daily[-1][1]
        total = sum(m.n for m in last.values())
        users_per_day = total / len(daily) if total else None
    n_arms = 1 + len(treatments)
    family = len(o.primary) * len(treatments)
    out = [
        power_info(name, arm, plain[(name, arm)], n_arms, users_per_day, o, family)
        for name in o.primary
        for arm in treatments
    ]
    return tuple(out)


def failed_power(p: PowerInfo, catalog: Catalog) -> PowerInfo:
    """``p`` as it stands, or, for a team metric that failed
    (:attr:`Catalog.failed <abeval.analysis.online_metrics.Catalog.failed>`), with
    no numbers and the status ``failed`` with its reason."""
    why = catalog.failed.get(p.metric)
    if why is None:
        return p
    unknown: dict[str, Any] = {
        "status": "failed",
        "message": why,
        "baseline_mean": None,
        "baseline_variance": None,
        "mde_relative": None,
        "mde_absolute": None,
        "users_by_arm": None,
        "total_users": None,
    }
    return replace(
        p,
        detectable=replace(  # the users it has, no lift it could detect
            p.detectable,
            **{
                **unknown,
                "users_by_arm": p.detectable.users_by_arm,
                "total_users": p.detectable.total_users,
            },
        ),
        needed_for_target=replace(p.needed_for_target, **unknown),
        more_days_needed=None,
    )


def guardrail_powers(
    plain: PlainStats, power: tuple[PowerInfo, ...], treatments: list[str], o: ReportOptions
) -> tuple[GuardrailPower, ...]:
    """The non-inferiority plan of every guardrail with a margin, against the recorded
    plan's users, else the users the primary metrics need for the target MDE."""
    planned: tuple[int | None, str] = (o.plan_users, "plan")
    if o.plan_users is None:
        needs = [p.needed_for_target.total_users for p in power]
        known = [n for n in needs if n is not None]
        planned = (max(known) if known else None, "target_mde")
    family = len(o.guardrails) * len(treatments)
    powered = sum(o.margin(name) is not None for name in o.guardrails) * len(treatments)
    rows = (
        guardrail_power(
            name, arm, plain[(name, arm)], 1 + len(treatments), planned, o, family, powered
        )
        for name in o.guardrails
        for arm in treatments
        if (name, arm) in plain
    )
    return tuple(r for r in rows if r is not None)
