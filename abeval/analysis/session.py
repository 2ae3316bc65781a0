"""One experiment, read once: the session behind ``report``, ``power`` and (later)
``agreement``.

An :class:`ExperimentSession` owns the connection, the options and the
population the online pass materialises, and computes each part of the analysis
the first time it is asked for: the observed moments and health, the online
comparisons, the replayed offline metrics, the off-policy estimates and the
power rows. :func:`~abeval.analysis.online.build_report` asks for all of them;
``abeval power --experiment`` only for the comparisons and power, so it neither
replays the logs nor estimates off-policy.

The three parts read from the events (``observed``, ``offline``, ``ope``) and the
comparisons are asked of the store's kept summaries first
(:mod:`abeval.analysis.kept`) and kept there once computed, by a store opened for
writing: everything else is computed from them the same way whichever way they came.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from datetime import date, datetime, time, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from abeval.analysis.basis import basis_options, interval_basis, shown_metrics
from abeval.analysis.comparisons import PlainStats, metric_results
from abeval.analysis.decision import decision_basis, judged_results, plan_progress
from abeval.analysis.experiment_config import ExperimentConfig, read_config, with_record
from abeval.analysis.interleaving import InterleavingSection, interleaving_section
from abeval.analysis.kept import depends, keep_row, kept_part, options_key, write_pending
from abeval.analysis.observation import Observed, days_observed, observe
from abeval.analysis.offline_report import OfflineSection, replayed_offline
from abeval.analysis.ope import OpeSection, ope_results
from abeval.analysis.power_rows import failed_power, guardrail_powers, power_rows
from abeval.analysis.report_model import (
    DecisionBasis,
    GuardrailPower,
    OnlineMetricResult,
    PlanProgress,
    PowerInfo,
    ReportOptions,
)
from abeval.analysis.team_metrics import read_catalog, refused_metrics, without
from abeval.store.experiment_facts import ExperimentFacts, ExperimentRow, read_facts, read_row
from abeval.store.kept import read_kept
from abeval.store.ope_target import recorded
from abeval.store.shared_ctes import drop
from abeval.store.sources import read_in_place
from abeval.store.sql.online_variables import Moments

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.analysis.kept_batch import Prefetched
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database


class ExperimentSession:
    """``with ExperimentSession(store, "home-reco-v2", options) as s: s.power``.

    The parts are computed lazily and kept; the temporary population table lives
    until the replay has read it or the session closes. ``catalog``: the store's
    metrics when the caller has read them already, else read on entering."""

    def __init__(
        self,
        store: Database,
        experiment: str,
        options: ReportOptions | None = None,
        catalog: Catalog | None = None,
        prefetched: Prefetched | None = None,
    ):
        self.store = store
        #: The store's rows, target files and kept parts read at once for many
        #: sessions (:mod:`abeval.analysis.kept_batch`); None: each read here.
        self._prefetched = prefetched
        self.experiment = experiment
        self.options = options or ReportOptions()
        self._catalog = catalog
        self._stack: ExitStack | None = None
        self._conn: Connection | None = None
        self._population: list[str] = []
        self.place: Any = None
        #: The experiment's row of ``experiments`` (None: read in place).
        self.row: ExperimentRow | None = None
        #: A team metric was refused on the data: the parts are not kept.
        self._refused = False

    def __enter__(self) -> ExperimentSession:
        stack = ExitStack()
        self._stack = stack
        try:
            if self._catalog is None:
                self._catalog = read_catalog(self.conn)
            # The experiment's row alone where parts are kept (its ingests and
            # propensity probe, which read the events, only when a part is computed:
            # ``facts``); on Spark all of them in one statement. An experiment the
            # store does not hold may be read in place.
            given = self._prefetched
            if given is not None and self.experiment in given.rows:
                self.row = given.rows[self.experiment]
            elif self.store.backend.runs_migrations:
                self.row = read_row(self.conn, self.experiment)
            else:
                self.row = self.facts = read_facts(self.conn, self.experiment)
            if self.row is None:
                self.place = stack.enter_context(read_in_place(self.conn, self.experiment))
            if self.options.flags is not None:  # the saved configuration, under the run's flags
                config = (
                    ExperimentConfig.from_json(self.row.config)
                    if self.row is not None
                    else read_config(self.conn, self.experiment)
                )
                self.options = with_record(
                    self.options, config, self.options.flags, self.experiment
                )
        except BaseException as exc:
            # through the connection's own exit, which turns a store fault (a server
            # gone, a lost connection) into its one-line error
            self._stack = self._conn = None
            stack.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            self._drop_population()
        finally:
            self._conn = None
            stack.__exit__(*exc)  # type: ignore[arg-type]
        if exc[0] is None:  # after the reading connection is closed, in a transaction of its own
            write_pending(self.store)

    @property
    def conn(self) -> Connection:
        """The session's connection, opened at its first use (a session whose
        parts are all kept and prefetched opens none)."""
        if self._conn is None:
            if self._stack is None:
                raise RuntimeError("use the session inside `with`")
            self._conn = self._stack.enter_context(self.store.connect())
        return self._conn

    @property
    def catalog(self) -> Catalog:
        """The store's metrics (built-in and team-defined) this session reads."""
        if self._catalog is None:
            raise RuntimeError("use the session inside `with`")
        return self._catalog

    def _drop_population(self) -> None:
        if self._population and self._conn is not None:
            population, self._population = self._population, []
            drop(self._conn, population)

    @cached_property
    def facts(self) -> ExperimentFacts | None:
        """The experiment's row, ingests and propensity probe (one statement), read
        when a part is computed from the events; None for one read in place."""
        if self.row is None or isinstance(self.row, ExperimentFacts):
            return self.row
        return read_facts(self.conn, self.experiment)

    @cached_property
    def _keys(self) -> tuple[str, str] | None:
        """The digests the parts are kept under (:mod:`abeval.analysis.kept`); None
        for an experiment read in place, or on Spark (no ``kept_summaries`` table, and
        each statement's fixed cost), whose parts are not kept."""
        if self.row is None or not self.store.backend.runs_migrations:
            return None
        given = self._prefetched
        if given is not None:
            targets = given.targets.get(self.experiment)
        else:
            targets = recorded(self.conn, self.experiment)
        found = depends(self.experiment, self.row, targets, self.catalog)
        return options_key(self.options), found

    @cached_property
    def _kept_parts(self) -> dict[str, str]:
        """The texts of the parts kept under this session's digests, read at once."""
        keys, given = self._keys, self._prefetched
        if keys is None:
            return {}
        if given is not None:  # every kept row of the parts read: what is not there is not kept
            return dict(given.kept.get((self.experiment, *keys), {}))
        return read_kept(self.conn, self.experiment, *keys)

    def _kept(self, part: str, kind: type) -> Any:
        """The kept ``part``, or None when it is to be computed."""
        return kept_part(self._kept_parts, part, kind)

    def _keep(self, part: str, value: object) -> None:
        """Keep ``part`` (written when the session closes, or by the open store
        after the call) unless the store is read-only or a metric was refused."""
        keys, keeping = self._keys, self.store.keeping
        if keys is None or keeping is None or self._refused:
            return
        row = keep_row(self.experiment, part, *keys, value)
        if row is not None:
            keeping.append(row)

    @cached_property
    def observed(self) -> Observed:
        """Settings, arms (control first), window, caps, per-arm moments, health,
        daily and segment moments, ingests: one pass over the population (or
        the kept summary of it)."""
        kept = self._kept("observed", Observed)
        if kept is not None:
            return kept
        try:
            seen, self._population = observe(
                self.conn, self.experiment, self.options, self.catalog, self.facts
            )
        except Exception as exc:
            # A team metric whose expression the engine refuses on the data fails
            # its own row, not the report: find which (only after a failure, so the
            # common case pays nothing) and compute the others without it.
            failed = self._failing_metrics(exc)
            if not failed:
                raise
            self._catalog = without(self.catalog, failed)
            self._refused = True
            seen, self._population = observe(
                self.conn, self.experiment, self.options, self.catalog, self.facts
            )
        self._keep("observed", seen)
        return seen

    def _failing_metrics(self, exc: Exception) -> dict[str, str]:
        """The team metrics whose expressions the engine refuses (name → reason),
        after ``exc`` ended the one pass; none when ``exc`` is no refusal of the
        engine's or a fault of the store (a server gone, an interrupt)."""
        from sqlalchemy.exc import DBAPIError

        if not isinstance(exc, DBAPIError) or not self.catalog.definitions:
            return {}
        if self.store.backend.fault(self.store.display, self.store.url, exc) is not None:
            return {}
        self.conn.rollback()  # the failed statement aborted the transaction
        return refused_metrics(self.conn, self.catalog)

    @property
    def control(self) -> str:
        return self.observed.control

    @property
    def treatments(self) -> list[str]:
        return self.observed.treatments

    @cached_property
    def _compared(self) -> tuple[list[OnlineMetricResult], PlainStats]:
        kept = self._kept("compared", tuple)  # a function of the parts above and the options
        if kept is not None:
            return kept
        seen, o = self.observed, self.options
        found = metric_results(seen.moments, self.control, self.treatments, o, self.catalog)
        self._keep("compared", found)
        return found

    @property
    def comparisons(self) -> list[OnlineMetricResult]:
        """Every online metric compared per treatment arm (corrected, judged)."""
        return self._compared[0]

    @property
    def plain(self) -> PlainStats:
        """The unadjusted per-arm statistics of each (metric, arm), for power."""
        return self._compared[1]

    def online_comparisons(self) -> list[OnlineMetricResult]:
        """The per-arm online comparisons alone, without replay or off-policy
        estimates: what the agreement board needs of each experiment."""
        return self.comparisons

    @cached_property
    def offline(self) -> OfflineSection:
        """The offline metrics replayed over the same population and window."""
        kept = self._kept("offline", tuple)
        if kept is not None:
            return kept
        seen = self.observed
        windowed = replace(self.options, window_from=seen.window.start, window_to=seen.window.end)
        found = replayed_offline(
            self.conn,
            self.experiment,
            self.control,
            self.treatments,
            windowed,
            self._population,
            # the health counts read the same window's events: with no duplicate
            # impression there, the replay need not group them
            shown_once=seen.health.duplicate_impressions == 0,
        )
        self._keep("offline", found)
        return found

    @cached_property
    def ope(self) -> OpeSection:
        """The off-policy estimates (or why they were not run), over the online
        pass's population when it has no window (the estimates read all the
        experiment's events); then the population table is dropped."""
        kept = self._kept("ope", OpeSection)
        if kept is not None:
            self._drop_population()
            return kept
        o = self.options
        probe = self.facts.has_propensities if self.facts is not None else None
        whole = self._population[0] if self._population and not self.observed.window else None
        try:
            found = ope_results(
                self.conn,
                self.experiment,
                self.control,
                self.treatments,
                o.ope,
                o.alpha,
                probe,
                whole,
            )
        finally:
            self._drop_population()
        self._keep("ope", found)
        return found

    @cached_property
    def interleaving(self) -> InterleavingSection | None:
        """Δ_AB of an interleaved experiment (docs/metrics.md#interleaving); None
        for an A/B test."""
        teams = self.observed.teams
        if teams is None:
            return None
        kept = self._kept("interleaving", InterleavingSection)  # the board reads it too
        if kept is not None:
            return kept
        found = interleaving_section(self.conn, self.experiment, teams, alpha=self.options.alpha)
        self._keep("interleaving", found)
        return found

    @cached_property
    def power(self) -> tuple[PowerInfo, ...]:
        """The power rows of the primary metrics, per treatment arm (kept: their
        searches cost more than reading them)."""
        kept = self._kept("power", tuple)
        if kept is not None:
            return kept
        seen = self.observed
        rows = power_rows(self.plain, seen.daily, self.control, self.treatments, self.options)
        found = tuple(failed_power(p, self.catalog) for p in rows)
        self._keep("power", found)
        return found

    @cached_property
    def guardrail_power(self) -> tuple[GuardrailPower, ...]:
        """Whether each guardrail with a margin can be shown non-inferior at the
        planned size (docs/metrics.md#power-and-mde)."""
        return guardrail_powers(self.plain, self.power, self.treatments, self.options)

    @cached_property
    def judged(self) -> tuple[list[OnlineMetricResult], DecisionBasis, PlanProgress | None]:
        """What the decision reads and the report shows (docs/metrics.md#decision,
        :mod:`abeval.analysis.basis`): the comparisons under the decision's basis
        (group-sequential while no plan is recorded, always-valid with --sequential,
        fixed-horizon once the plan is reached, frozen at the planned look), each
        with its fixed-horizon reference while the basis is not the fixed horizon;
        the basis and the plan's progress. Kept, like ``compared``: a function of the
        parts above and the options whose group-sequential searches cost the most
        of a report read from kept parts."""
        kept = self._kept("judged", tuple)
        if kept is not None:
            return kept
        seen, o = self.observed, self.options
        progress = plan_progress(o, days_observed(seen), seen.health.users_analysed)
        shown_o = basis_options(o, decision_basis(o, progress))
        under = self.comparisons if shown_o.sequential == o.sequential else self._results(shown_o)
        judged, basis, progress = judged_results(
            under,
            seen.moments,
            seen.daily,
            self.control,
            self.treatments,
            shown_o,
            self.catalog,
            self.power,
            days_observed(seen),
            self._moments_through,
        )
        fixed = None
        if interval_basis(basis) != "fixed_horizon":
            fixed = (
                self.comparisons
                if not o.sequential
                else self._results(replace(o, sequential=False))
            )
        found = shown_metrics(judged, fixed, basis), basis, progress
        self._keep("judged", found)
        return found

    def _moments_through(self, index: int) -> dict[str, Moments]:
        """The per-arm moments a report through the day of ``observed.daily[index]``
        reads (CUPED's pre-period and the caps as that report has them): the data
        of a look the decision was made at, read on a later day. Kept like the
        session's own observation, under the options of that window."""
        seen = self.observed
        end = datetime.combine(date.fromisoformat(seen.daily[index][0][:10]), time())
        end += timedelta(days=1)
        if seen.window.end is not None and seen.window.end < end:
            end = seen.window.end
        o = replace(self.options, window_to=end, daily=False, segment=None)
        keys = self._keys
        key = None if keys is None else (options_key(o), keys[1])
        kept = {} if key is None else read_kept(self.conn, self.experiment, *key)
        found = kept_part(kept, "observed", Observed)
        if found is None:
            found, population = observe(self.conn, self.experiment, o, self.catalog, self.facts)
            drop(self.conn, population)
            if key is not None and self.store.keeping is not None and not self._refused:
                row = keep_row(self.experiment, "observed", *key, found)
                if row is not None:
                    self.store.keeping.append(row)
        return dict(found.moments)

    def _results(self, o: ReportOptions) -> list[OnlineMetricResult]:
        seen = self.observed
        return metric_results(seen.moments, self.control, self.treatments, o, self.catalog)[0]
