"""The experiments' lines: what the store holds per experiment (``abeval
experiments``), the settings and options recorded for one (``abeval experiment
show`` and ``set``) and the target probabilities recorded. :mod:`abeval.render`
hands them to the CLI and to notebooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.analysis.experiment_config import ExperimentConfig
    from abeval.analysis.experiment_record import ExperimentRecord
    from abeval.store.experiments import ExperimentSettings, ExperimentSummary, TargetsRecorded


def recordable_options() -> dict[str, str]:
    """The options ``abeval experiment set`` records: name → the option's flag."""
    from abeval.analysis.experiment_config import OPTIONS

    return dict(OPTIONS)


def config_lines(config: ExperimentConfig) -> list[str]:
    """One ``name: value`` line per recorded option of ``config``."""
    from abeval.analysis.experiment_config import OPTIONS, describe

    return [
        f"{OPTIONS[name].lstrip('-')}: {describe(name, config)}"
        for name in OPTIONS
        if getattr(config, name) is not None
    ]


def settings_line(experiment: str, s: ExperimentSettings) -> str:
    """``home: control control; split equal; window ...``: the recorded settings."""
    from abeval.formatting import when

    shares = ", ".join(f"{k}={v:.0%}" for k, v in (s.split or {}).items()) or "equal"
    if s.control_arm:
        chosen = s.control_arm
    elif "control" in s.arms:
        chosen = "control (the arm named control)"
    else:
        chosen = "not recorded (set it with --control ARM)"
    line = f"{experiment}: control {chosen}; split {shares}"
    if s.window_from or s.window_to:
        first = when(s.window_from.isoformat()) if s.window_from else "the first event"
        last = when(s.window_to.isoformat()) if s.window_to else "the last event"
        line += f"; window {first} to {last} (excluded)"
    return line


def settings_lines(experiment: str, s: ExperimentSettings, config: ExperimentConfig) -> list[str]:
    """``abeval experiment show``: the settings line, one line per recorded option, and
    the options left to their defaults."""
    lines = [settings_line(experiment, s), *(f"  {line}" for line in config_lines(config))]
    if config.plan_recorded is not None:
        from abeval.report.method_text import plan_record_text

        lines.append(f"  plan {plan_record_text(config.plan_recorded)}")
    from abeval.analysis.experiment_config import LINKS

    missing = [
        flag
        for name, flag in recordable_options().items()
        if getattr(config, name) is None and name not in LINKS
    ]
    if missing:
        lines.append(f"  not recorded (the defaults apply): {', '.join(missing)}")
    return lines


def settings_document(
    experiment: str, s: ExperimentSettings, config: ExperimentConfig
) -> dict[str, Any]:
    """The settings part of ``abeval experiment show -f json`` (which is
    ``json_document(store.experiment(X))``)."""
    from abeval.analysis.experiment_record import settings_fields

    return settings_fields(experiment, s, config)


def outcome_line(record: ExperimentRecord) -> str:
    """``home-reco-v2: shipped on 2026-03-20; owner ana; tags ranking``: what was
    decided about an experiment (``abeval experiment set``)."""
    from abeval.report.experiment_text import status_text

    o = record.outcome
    parts = [f"{record.experiment}: {status_text(o.status, o.decided_on)}"]
    parts += [f"owner {o.owner}"] if o.owner else []
    parts += [f"tags {', '.join(o.tags)}"] if o.tags else []
    parts += [f"hypothesis {o.hypothesis!r}"] if o.hypothesis else []
    return "; ".join(parts)


def targets_line(experiment: str, done: TargetsRecorded) -> str:
    """The target's probabilities recorded: the coverage of each direction and the
    rows left out."""
    found, r = done.check, done.recorded
    covered = "; ".join(
        f"{c.target} from {c.source}'s logs: {c.covered:,} of {c.requests:,} requests "
        f"({c.share:.1%})"
        for c in found.coverage
    )
    line = f"{experiment}: target probabilities recorded from {r.file}: {r.rows:,} rows; {covered}"
    if found.unmatched:
        line += f"; {found.unmatched:,} rows name no request of this experiment (not recorded)"
    return line


def experiments_lines(found: Sequence[ExperimentSummary]) -> list[str]:
    """Each experiment's time range, control and source, then its arms' users and
    events (``abeval experiments``)."""
    from abeval.formatting import counted, printable, when

    lines = []
    for e in found:
        control = f", control {e.control_arm}" if e.control_arm else ""
        place = f", read in place from source {e.source}" if e.source else ""
        span = f"{when(e.first_ts)} .. {when(e.last_ts)}"
        lines.append(printable(f"{e.experiment}  {span}{control}{place}"))
        for a in e.arms:
            events = ", ".join(f"{k} {v:,}" for k, v in a.events.items())
            lines.append(
                printable(f"  {a.arm}: {counted(a.users, 'user')}; {events or 'no events'}")
            )
        if e.users_in_several_arms:
            several = counted(e.users_in_several_arms, "user")
            lines.append(f"  {several} seen in several arms (left out of the analysis)")
    return lines
