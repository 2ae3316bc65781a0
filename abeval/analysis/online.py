"""Assemble the experiment report: ask the experiment's session
(:mod:`abeval.analysis.session`) for each part and put them in an
:class:`~abeval.analysis.report_model.ExperimentReport`.

The parts are made elsewhere: what the store holds by
:mod:`abeval.analysis.observation`, the comparisons by
:mod:`abeval.analysis.comparisons`, the replay by
:mod:`abeval.analysis.offline_report`, the off-policy estimates by
:mod:`abeval.analysis.ope`, the power rows by :mod:`abeval.analysis.power_rows`,
the decisions and verdicts by :mod:`abeval.analysis.decision` and
:mod:`abeval.analysis.verdicts`, the methodology by
:mod:`abeval.analysis.methodology`. This module adds the settings the report was
made under and the arms' shares.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval import __version__
from abeval.analysis.basis import basis_options, with_shown_end, with_shown_online
from abeval.analysis.capping import cap_infos
from abeval.analysis.comparisons import daily_points, segment_results
from abeval.analysis.decision import decisions
from abeval.analysis.in_place import with_source
from abeval.analysis.methodology import methodology
from abeval.analysis.observation import Observed
from abeval.analysis.power_rows import planning_alpha, planning_rule
from abeval.analysis.predicted import predicted_results
from abeval.analysis.report_model import (
    SCHEMA_VERSION,
    ArmInfo,
    ExperimentReport,
    ReportOptions,
    Settings,
)
from abeval.analysis.session import ExperimentSession
from abeval.analysis.verdicts import verdicts

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database

__all__ = ["ReportOptions", "build_report"]


def build_report(
    store: Database, experiment: str, o: ReportOptions | None = None, catalog: Catalog | None = None
) -> ExperimentReport:
    """Everything ``abeval report`` shows for one experiment, computed with the
    store's ``catalog`` of metrics (read from the store unless given)."""
    o = o or ReportOptions()
    with ExperimentSession(store, experiment, o, catalog) as session:
        o = session.options  # under the saved configuration, when the run reads it
        seen = session.observed
        control, treatments = seen.control, seen.treatments
        # The replay reads the population (and window) of the online pass.
        offline, offline_values, offline_status = session.offline
        ope = session.ope
        power = session.power
        judged, basis, progress = session.judged
        guardrails = session.guardrail_power
        interleaved = session.interleaving
        place = session.place
        catalog = session.catalog
    # Every metric, daily point and segment is shown under the decision's basis
    # (abeval.analysis.basis): the options below are sequential exactly when it is
    # always-valid.
    shown_o = basis_options(o, basis)
    predicted = predicted_results(store, experiment, control, treatments, judged)
    segments, segment_warning = segment_results(seen.segments, control, shown_o, catalog)
    decided = decisions(judged, seen.health, power, o, catalog, basis=basis, progress=progress)
    report = ExperimentReport(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        experiment=experiment,
        store=store.display,
        decisions=decided,
        settings=_settings(seen, shown_o),
        arms=_arm_infos(seen),
        health=seen.health,
        caps=cap_infos(seen.caps, catalog, seen.labels),
        verdicts=verdicts(judged, seen.health, o, decided, catalog=catalog),
        metrics=tuple(judged),
        daily=with_shown_end(
            daily_points(seen.daily, seen.own_days, control, treatments, shown_o, catalog),
            judged,
            progress.decided_day if progress is not None else None,
        ),
        segments=segments,
        segment_warning=segment_warning,
        power=power,
        offline=offline,
        offline_values=offline_values,
        offline_status=offline_status,
        methodology=methodology(seen, shown_o),
        ope=with_shown_online(ope, judged, control),
        predicted=predicted,
        guardrail_power=guardrails,
        interleaving=interleaved,
        catalog=catalog,
    )
    return with_source(report, place)


def _arm_infos(seen: Observed) -> tuple[ArmInfo, ...]:
    shares = seen.weights or [1.0] * len(seen.arms)
    total_share = sum(shares)
    return tuple(
        ArmInfo(
            arm=a,
            users=seen.moments[a].n if a in seen.moments else 0,
            is_control=a == seen.control,
            expected_share=s / total_share,
        )
        for a, s in zip(seen.arms, shares, strict=True)
    )


def _settings(seen: Observed, o: ReportOptions) -> Settings:
    family = len(o.primary) * len(seen.treatments)
    return Settings(
        control=seen.control,
        control_rule=seen.control_rule,
        alpha=o.alpha,
        correction=o.correction,
        method="sequential" if o.sequential else "fixed",
        tuning_n=o.tuning_n if o.sequential else None,
        cuped_days=o.cuped_days,
        primary=o.primary,
        guardrails=o.guardrails,
        segment=o.segment,
        target_mde=o.target_mde,
        power=o.power,
        relative_interval=o.relative_interval,
        window_from=seen.window.start.isoformat() if seen.window.start else None,
        window_to=seen.window.end.isoformat() if seen.window.end else None,
        window_rule=_window_rule(seen, o),
        caps=dict(o.caps),
        sources=_sources(seen, o),
        margins=dict(o.margins),
        secondary=o.secondary,
        plan_users=o.plan_users,
        plan_days=o.plan_days,
        planning_alpha=planning_alpha(o.alpha, family),
        planning_rule=planning_rule(o.correction, family),
        plan_recorded=o.plan_recorded,
        prior=o.prior,
        priors=o.priors,
    )


def _sources(seen: Observed, o: ReportOptions) -> dict[str, str]:
    """Where each setting came from: ``flag``, ``record`` or ``default``."""
    rules = {"option": "flag", "recorded": "record", "named_control": "default"}
    out = {"control": rules[seen.control_rule]}
    window = _window_rule(seen, o)
    out["window"] = "default" if window is None else "flag" if "option" in window else "record"
    return out | dict(o.sources)


def _window_rule(seen: Observed, o: ReportOptions) -> str | None:
    """Where the window's bounds came from: ``option``, ``recorded``, or both."""
    if not seen.window:
        return None
    asked = o.window_from is not None or o.window_to is not None
    recorded = seen.settings.window_from is not None or seen.settings.window_to is not None
    return "option and recorded" if asked and recorded else "option" if asked else "recorded"
