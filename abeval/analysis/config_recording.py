"""Recording an experiment's saved configuration (``abeval experiment set`` and
``unset``, ``experiment show``): the change checked against the store (the metric
names against its catalog, the interleaving link against its experiments), the
plan stamped against the data, everything written in one transaction.

What a configuration is, how it is parsed and checked, and how a run's flags
override it: :mod:`abeval.analysis.experiment_config`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields, replace
from typing import TYPE_CHECKING

from abeval.analysis.capping import check_cappable
from abeval.analysis.experiment_config import (
    OPTIONS,
    ExperimentConfig,
    check_options,
    read_config,
)
from abeval.analysis.online_metrics import check_known
from abeval.analysis.report_model import PlanRecord
from abeval.analysis.team_metrics import read_catalog
from abeval.errors import OptionError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database
    from abeval.store.experiment_outcomes import OutcomeChange
    from abeval.store.experiments import (
        ExperimentSettings,
        SettingsChange,
        TargetFile,
        TargetsRecorded,
    )


def merged(current: ExperimentConfig, changes: ExperimentConfig) -> ExperimentConfig:
    """``current`` with every option ``changes`` records replaced."""
    given = {f.name: getattr(changes, f.name) for f in fields(changes)}
    return replace(current, **{k: v for k, v in given.items() if v is not None})


def without(current: ExperimentConfig, names: Iterable[str]) -> ExperimentConfig:
    """``current`` with the options ``names`` removed."""
    return replace(current, **dict.fromkeys(names))


def record(
    store: Database,
    experiment: str,
    settings: SettingsChange,
    changes: ExperimentConfig,
    removed: Iterable[str] = (),
    *,
    targets: TargetFile | None = None,
    outcome: OutcomeChange | None = None,
) -> tuple[ExperimentSettings, ExperimentConfig, TargetsRecorded | None]:
    """Record ``settings`` (and the target's probabilities ``targets``), the
    options ``changes`` gives and what was decided (``outcome``), and forget those
    ``removed`` names (``control``, ``split``, ``window``, keys of :data:`OPTIONS`
    or of :data:`~abeval.store.experiment_outcomes.OUTCOME_FIELDS`), everything
    checked before anything is written: the whole change or nothing (one
    transaction; on Spark, under the writer lock, the target's tables, the
    outcome and then ``experiments`` each replaced by one pointer swap)."""
    from abeval.store.experiment_outcomes import (
        OUTCOME_FIELDS,
        OutcomeChange,
        changed,
        read_outcome,
        write_outcome,
    )
    from abeval.store.experiments import (
        apply_change,
        checked_change,
        cleared,
        config_column,
        get_settings,
        record_targets,
    )

    check_options(changes)
    removed = list(removed)
    with store.writing() as conn:
        catalog = read_catalog(conn)  # the metrics named may be the store's team-defined ones
        check_known(changes.primary or (), "primary", catalog)
        check_known(changes.secondary or (), "secondary", catalog)
        check_known([g.metric for g in changes.guardrails or ()], "guardrails", catalog)
        check_known([name for name, _ in changes.caps or ()], "cap", catalog)
        check_cappable(changes.caps or (), catalog)
        if changes.interleaving_of is not None:
            check_link(conn, experiment, changes.interleaving_of)
        _, values = checked_change(conn, experiment, settings)
        values |= cleared(removed)
        forgotten = [n for n in removed if n in OUTCOME_FIELDS]
        before = after = None
        if (outcome is not None and outcome.given()) or forgotten:
            before = read_outcome(conn, experiment)
            after = changed(before, outcome or OutcomeChange(), forgotten)
        config = read_config(conn, experiment)
        if changes.recorded() or set(removed) & set(OPTIONS):
            config = without(merged(config, changes), set(removed) & set(OPTIONS))
            config = stamped(conn, experiment, config, changes, removed)
            values |= config_column(config.recorded())
        done = record_targets(conn, experiment, targets) if targets is not None else None
        if after is not None and after != before:
            write_outcome(conn, after)
        apply_change(conn, experiment, values)
        current = get_settings(conn, experiment)
    return current, config, done


def check_link(conn: Connection, experiment: str, ab_test: str) -> None:
    """``experiment`` may be recorded as an interleaving of ``ab_test``: both are
    in the store, ``experiment`` is interleaved (its impressions name teams) and
    ``ab_test`` is not; an :class:`OptionError` on ``interleaving_of`` otherwise."""
    from abeval.store.experiments import experiment_names, unknown_experiment_message
    from abeval.store.sql.interleaving import experiment_teams

    def refuse(reason: str) -> OptionError:
        return OptionError("interleaving_of", ab_test, reason)

    known = experiment_names(conn)
    if ab_test not in known:
        raise refuse(unknown_experiment_message(ab_test, known))
    if ab_test == experiment:
        raise refuse("an experiment cannot be an interleaving of itself; name its A/B test")
    if experiment in known and not experiment_teams(conn, experiment):
        raise refuse(
            f"experiment {experiment!r} is not interleaved (its impressions name no team): "
            "only an interleaved experiment can be linked to an A/B test"
        )
    if experiment_teams(conn, ab_test):
        raise refuse(
            f"experiment {ab_test!r} is itself interleaved: name the A/B test of the "
            "same two rankers"
        )


def stamped(
    conn: Connection,
    experiment: str,
    config: ExperimentConfig,
    changes: ExperimentConfig,
    removed: Iterable[str],
) -> ExperimentConfig:
    """``config`` with its plan stamped against the data when this change records
    or removes a part of the plan (:class:`PlanRecord`): the time and what the
    store holds of the experiment now; no stamp once no plan is left."""
    from datetime import UTC, datetime

    from abeval.store.data_stamp import data_stamp

    plan = ("plan_users", "plan_days")
    touched = any(getattr(changes, n) is not None for n in plan) or set(removed) & set(plan)
    if not touched:
        return config
    if config.plan_users is None and config.plan_days is None:
        return replace(config, plan_recorded=None)
    now = data_stamp(conn, experiment)
    reached = (config.plan_users is None or now.users >= config.plan_users) and (
        config.plan_days is None or now.days >= config.plan_days
    )
    record_ = PlanRecord(
        recorded_at=datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
        data_until=now.last_event.isoformat(timespec="seconds") if now.last_event else None,
        days=now.days,
        users=now.users,
        plan_users=config.plan_users,
        plan_days=config.plan_days,
        after_data=reached,
    )
    return replace(config, plan_recorded=record_)


def show(store: Database, experiment: str) -> tuple[ExperimentSettings, ExperimentConfig]:
    """What is recorded for ``experiment``: its settings and its configuration."""
    from abeval.store.experiments import get_settings

    with store.connect() as conn:
        return get_settings(conn, experiment), read_config(conn, experiment)
