"""The program of a store's experiments (``abeval program`` without ``--history``,
``Store.program``): every experiment with its dates, users, what was decided
about it (``experiment set --status``), the report's decision, its primary lift
under the decision's basis, its guardrails and the agreement of its off-policy
estimate and recorded prediction with the online lift; and the program's
statistics, computed from each experiment's (lift, se, status, date, tags) by
the same :func:`abeval.analysis.program.build_program` as a history file's.

Each experiment is read by :func:`abeval.analysis.online.build_report`, the
function behind ``abeval report`` (its :class:`~abeval.analysis.session.ExperimentSession`),
under its saved configuration: the lifts are the report's, to the last digit.
The arm shown is the one the report ships, else its first treatment arm. The
program's primary metric is ``primary``, else the first primary metric of the
reports (in their order: ``ctr`` by default) that 2 or more experiments have a
lift of. An
experiment's date is the date of its decision when recorded, else the day of
its last event; ``since``/``until`` filter on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from abeval.analysis.program import ProgramReport, build_program
from abeval.analysis.program_history import ProgramEntry
from abeval.errors import AbevalError, InputError
from abeval.stats.program import MIN_EXPERIMENTS

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.analysis.report_model import ExperimentReport, ReportOptions
    from abeval.store.database import Database
    from abeval.store.experiment_outcomes import Outcome


@dataclass(frozen=True)
class ProgramFilters:
    """Which experiments the program holds: those with ``tag``, owned by ``owner``,
    dated from ``since`` through ``until`` (None: any)."""

    tag: str | None = None
    owner: str | None = None
    since: date | None = None
    until: date | None = None

    def keeps(self, outcome: Outcome, day: str | None) -> bool:
        if self.tag is not None and self.tag not in outcome.tags:
            return False
        if self.owner is not None and outcome.owner != self.owner:
            return False
        if self.since is not None and (day is None or day < self.since.isoformat()):
            return False
        return not (self.until is not None and (day is None or day > self.until.isoformat()))

    def words(self) -> str:
        """``tag ranking, owner ana, from 2026-01-01``; empty when none is given."""
        parts = [f"tag {self.tag}"] if self.tag else []
        parts += [f"owner {self.owner}"] if self.owner else []
        parts += [f"from {self.since.isoformat()}"] if self.since else []
        parts += [f"through {self.until.isoformat()}"] if self.until else []
        return ", ".join(parts)


@dataclass(frozen=True)
class ShownLift:
    """The report's relative lift of one metric for the arm shown, under the
    decision's ``basis``: the lift, its standard error and its shown interval."""

    metric: str
    lift: float | None
    se: float | None
    interval: tuple[float, float] | None
    basis: str


@dataclass(frozen=True)
class StoredExperiment:
    """One experiment of the store as the program page shows it: ``lifts`` holds
    the report's lift of each primary metric for ``arm`` (:meth:`lift` picks
    the program's); nothing when its report could not be made (``problem``
    says why)."""

    experiment: str
    first_day: str | None
    last_day: str | None
    date: str
    outcome: Outcome
    users: int | None = None
    arm: str | None = None
    decision: str | None = None
    reason: str = ""
    lifts: tuple[ShownLift, ...] = ()
    #: (guardrail metric, its reading: passed, worse, underpowered, unchecked)
    guardrails: tuple[tuple[str, str], ...] = ()
    #: The off-policy estimate's agreement with the online lift (agree, disagree,
    #: inconclusive), None when none was estimated.
    off_policy: str | None = None
    #: The recorded evaluation's predicted lifts: (online metric, offline metric,
    #: agreement).
    predicted: tuple[tuple[str, str, str], ...] = ()
    problem: str | None = None

    def lift(self, metric: str) -> ShownLift | None:
        """The lift of ``metric`` (None when the experiment has none)."""
        return next((x for x in self.lifts if x.metric == metric), None)

    def prediction(self, metric: str) -> tuple[str, str] | None:
        """(offline metric, agreement) of the prediction of ``metric``, if any."""
        return next(((o, a) for m, o, a in self.predicted if m == metric), None)


@dataclass(frozen=True)
class StoreProgram(ProgramReport):
    """A program's statistics (:class:`ProgramReport`; its ``source`` ``of the
    store`` and the filters) read from a store, with every experiment's row of the
    store (``stored``, in the store's order), the filters and the reports' pages
    when written (experiment → path)."""

    stored: tuple[StoredExperiment, ...] = ()
    #: The store's place (its password masked), as its pages may show it.
    store: str = ""
    filters: ProgramFilters = ProgramFilters()
    min_experiments: int = MIN_EXPERIMENTS
    pages: tuple[tuple[str, str], ...] = ()


def _day(ts: str | None) -> str | None:
    return ts[:10] if ts else None


def _from_report(
    row: StoredExperiment, report: ExperimentReport, primary: str | None
) -> tuple[StoredExperiment, list[ProgramEntry]]:
    """``row`` completed from ``report``, and the program's entries of the
    experiment: one per primary metric of the arm shown (and ``primary`` when the
    report has it in another role) that has a lift and a standard error."""
    from dataclasses import replace

    decisions = report.decisions
    first = decisions[0] if decisions else None
    chosen = next((d for d in decisions if d.decision == "ship"), first)
    arm = chosen.arm if chosen is not None else None
    wanted = [
        m for m in report.metrics if m.arm == arm and (m.role == "primary" or m.metric == primary)
    ]
    lifts = tuple(
        ShownLift(m.metric, m.lift, m.comparison.relative.se, m.interval, m.basis) for m in wanted
    )
    entries = [
        ProgramEntry(row.experiment, x.metric, x.lift, x.se, row.outcome.status, row.date,
                     row.outcome.tags)
        for x in lifts
        if x.lift is not None and x.se  # a lift with a standard error above 0
    ]  # fmt: skip
    directions = report.ope.directions if report.ope is not None else ()
    off_policy = next(
        (d.agreement for d in directions if d.target == arm and d.source != arm), None
    )
    recorded = report.predicted.lifts if report.predicted is not None else ()
    predicted = tuple((p.online_metric, p.metric, p.agreement) for p in recorded if p.arm == arm)
    done = replace(
        row,
        users=report.health.users_analysed,
        arm=arm,
        decision=chosen.decision if chosen is not None else None,
        reason=chosen.reason if chosen is not None else "",
        lifts=lifts,
        guardrails=tuple(
            (g.metric, g.guardrail or "unchecked") for g in (chosen.guardrails if chosen else ())
        ),
        off_policy=off_policy,
        predicted=predicted,
    )
    return done, entries


def store_program(
    store: Database,
    options: ReportOptions,
    catalog: Catalog,
    *,
    filters: ProgramFilters = ProgramFilters(),
    primary: str | None = None,
    alpha: float = 0.05,
    min_experiments: int = MIN_EXPERIMENTS,
    progress: Callable[[str], None] | None = None,
    each: Callable[[ExperimentReport], str] | None = None,
) -> StoreProgram:
    """The program of the store's experiments that ``filters`` keep (module
    docstring), each read under ``options`` (and its saved configuration);
    ``each(report)``, when given, is called with every report made and returns
    the place of its page (``pages``)."""
    from dataclasses import replace

    from abeval.analysis.online import build_report
    from abeval.store.experiment_outcomes import Outcome, read_outcomes
    from abeval.store.experiments import event_spans

    spans = event_spans(store)  # the experiments' row alone: counting their events costs
    with store.connect() as conn:
        outcomes = read_outcomes(conn)
    rows: list[StoredExperiment] = []
    for name, (first_ts, last_ts) in spans.items():
        outcome = outcomes.get(name, Outcome(name))
        first, last = _day(first_ts), _day(last_ts)
        row = StoredExperiment(name, first, last, outcome.decided_on or last or "", outcome)
        if filters.keeps(outcome, row.date or None):
            rows.append(row)
    shown = filters.words()
    source = "of the store" + (f" ({shown})" if shown else "")
    if len(rows) < 2:
        which = f" with {shown}" if shown else ""
        raise InputError(
            f"the store holds {len(rows)} experiment{'' if len(rows) == 1 else 's'}{which}; "
            "a program needs at least 2 (ingest more, or widen {tag}, {owner}, {since}, {until})",
            parameters=("tag", "owner", "since", "until"),
        )
    entries: list[ProgramEntry] = []
    done: list[StoredExperiment] = []
    pages: list[tuple[str, str]] = []
    for i, row in enumerate(rows):
        if progress is not None:
            progress(f"reading {row.experiment} ({i + 1} of {len(rows)})")
        try:
            report = build_report(store, row.experiment, options, catalog)
        except AbevalError as exc:
            done.append(replace(row, problem=str(exc).splitlines()[0]))
            continue
        if each is not None:
            pages.append((row.experiment, each(report)))
        finished, found = _from_report(row, report, primary)
        done.append(finished)
        entries += found
    program = _program(source, entries, done, filters, primary, alpha, min_experiments)
    return replace(program, pages=tuple(pages), store=store.display)


def _program(
    source: str,
    entries: Sequence[ProgramEntry],
    rows: Sequence[StoredExperiment],
    filters: ProgramFilters,
    primary: str | None,
    alpha: float,
    min_experiments: int,
) -> StoreProgram:
    """The statistics of ``entries`` by :func:`build_program`, with the rows."""
    from dataclasses import fields

    names = {e.experiment for e in entries}
    if len(names) < 2:
        raise InputError(
            f"{source}: {len(names)} of its {len(rows)} experiments "
            f"{'has' if len(names) == 1 else 'have'} a primary lift; a program needs at least 2"
        )
    if primary is None:  # the first primary metric (in the reports' order) of 2 or more lifts
        counts: dict[str, int] = {}
        for e in entries:
            counts[e.metric] = counts.get(e.metric, 0) + 1
        declared = dict.fromkeys(x.metric for r in rows for x in r.lifts)
        primary = next((m for m in declared if counts.get(m, 0) >= 2), entries[0].metric)
    base = build_program(source, entries, primary=primary, alpha=alpha,
                         min_experiments=min_experiments)  # fmt: skip
    values = {f.name: getattr(base, f.name) for f in fields(ProgramReport)}
    return StoreProgram(**values, stored=tuple(rows), filters=filters,
                        min_experiments=min_experiments)  # fmt: skip
