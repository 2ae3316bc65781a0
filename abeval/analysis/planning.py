"""``abeval power --experiment``: the plan of one experiment read from its session
(:mod:`abeval.analysis.session`), without the replay or the off-policy estimates.
Its rows are made by :mod:`abeval.analysis.power_rows`, the functions of the
report's power section, so the plan and the report always agree."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from abeval.analysis.interleaving import InterleavingPlan, interleaving_plan, interleaving_stats
from abeval.analysis.online_metrics import arm_stats
from abeval.analysis.power_rows import planning_alpha, planning_rule
from abeval.analysis.report_model import GuardrailPower, PowerInfo, ReportOptions
from abeval.analysis.session import ExperimentSession
from abeval.stats.sufficient import RatioStats

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database


def plan_from_data(
    store: Database, experiment: str, metrics: tuple[str, ...], o: ReportOptions
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
    #: An interleaved experiment's plan (docs/metrics.md#interleaving); None for an A/B test.
    interleaving: InterleavingPlan | None = None


def plan_report(
    store: Database,
    experiment: str,
    o: ReportOptions,
    catalog: Catalog | None = None,
    delta: float | None = None,
) -> Plan:
    """The :class:`Plan` of ``experiment`` under ``o``, from its session
    (``catalog``: the store's metrics when read already); for an interleaved
    experiment, the users needed to detect the preference ``delta`` (else the
    observed one)."""
    with ExperimentSession(store, experiment, replace(o, offline=False), catalog) as session:
        power, guardrails, options = session.power, session.guardrail_power, session.options
        family = len(options.primary) * len(session.treatments)
        catalog = session.catalog
        interleaved = _interleaving(session, delta)
    return Plan(
        power=power,
        guardrails=guardrails,
        options=options,
        planning_alpha=planning_alpha(options.alpha, family),
        planning_rule=planning_rule(options.correction, family),
        catalog=catalog,
        interleaving=interleaved,
    )


def _interleaving(session: ExperimentSession, delta: float | None) -> InterleavingPlan | None:
    """The plan of an interleaved experiment's session (None for an A/B test)."""
    seen, o = session.observed, session.options
    if seen.teams is None:
        return None
    moments = seen.moments[seen.control]
    ctr = arm_stats(session.catalog["ctr"], moments, cuped=False)
    assert isinstance(ctr, RatioStats)
    return interleaving_plan(
        interleaving_stats(session.conn, session.experiment, seen.teams),
        moments.n,
        ctr,
        seen.teams,
        delta=delta,
        ctr_lift=o.target_mde,
        alpha=o.alpha,
        power=o.power,
    )
