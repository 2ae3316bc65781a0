"""The Python API: what a notebook or a script calls, and what the CLI calls.

``abeval.open(db)`` gives a :class:`Store` (a context manager) whose methods
load events and analyse experiments; ``abeval.evaluate`` scores recommendation
runs against held-out truth. Options are keyword arguments named and defaulted
as the CLI's options are (``primary``, ``k``, ``alpha``...); an invalid value
raises :class:`~abeval.errors.OptionError` (the parameter, the value, the values
allowed), a bad input :class:`~abeval.errors.InputError`. Nothing here prints
or exits. See docs/python.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, cast, get_args

from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard as AgreementBoard
    from abeval.analysis.agreement import AgreementOptions
    from abeval.analysis.evaluate.record import RecordedEvaluation
    from abeval.analysis.evaluate.results import EvaluationResult
    from abeval.analysis.experiment_config import ExperimentConfig as ExperimentConfig
    from abeval.analysis.forecast import ForecastOptions, ForecastReport
    from abeval.analysis.forecast_candidate import Evidence
    from abeval.analysis.metric_records import Added, MetricRow
    from abeval.analysis.planning import Plan
    from abeval.analysis.report_model import ExperimentReport, PowerInfo, ReportOptions
    from abeval.stats import PowerResult
    from abeval.store.engine import Store as EngineStore
    from abeval.store.experiments import ExperimentSettings as ExperimentSettings
    from abeval.store.experiments import ExperimentSummary
    from abeval.store.experiments import TargetsRecorded as TargetsRecorded
    from abeval.store.ingest import IngestSummary as IngestSummary
    from abeval.store.migrate import Migration
    from abeval.store.rejects import RejectedRow
    from abeval.store.source_mapping import Mapping as Mapping_
    from abeval.store.sources import Source
    from abeval.store.sources import SourceCheck as SourceCheck

__all__ = [
    "Experiments",
    "Store",
    "agreement_history",
    "cutoffs",
    "demo",
    "evaluate",
    "experiment_config",
    "forecast_evidence",
    "forecast_history",
    "forecast_options",
    "metric_names",
    "model_argument",
    "named_models",
    "open",
    "parse_bound",
    "plan_power",
    "report_options",
    "source_mapping",
]

Names = str | Sequence[str] | None

#: Bounds of the agreement board's resamples: fewer makes a percentile interval
#: meaningless, more only costs time and memory (resamples × pairs per signal).
MIN_RESAMPLES, MAX_RESAMPLES = 100, 100_000


def open(
    db: str | Path | None = None,
    *,
    read_only: bool = False,
    create: bool = True,
    migrate: bool = True,
) -> Store:
    """Open the store ``db`` (a DuckDB file, a SQLAlchemy URL or a Spark Connect
    URL; default ``$ABEVAL_DB``, else ``./abeval.duckdb``). Writable by default
    (a missing DuckDB file is created unless ``create=False``); ``read_only=True``
    for analysis only. ``migrate=False`` leaves the schema as it is (for
    :meth:`Store.migrate`, which reports the steps it applies)."""
    from abeval.store import open_store

    shown = None if db is None else str(db)
    return Store(open_store(shown, read_only=read_only, create=create, migrate=migrate))


class Experiments(list["ExperimentSummary"]):
    """The experiments of a store (a list), with ``problems``: the sources read
    in place that could not be listed, one line each."""

    problems: tuple[str, ...] = ()


class Store:
    """An open store: ``with abeval.open("abeval.duckdb") as store: ...``."""

    def __init__(self, store: EngineStore) -> None:
        self._store = store

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    @property
    def display(self) -> str:
        """The store as messages name it (a URL without its password)."""
        return self._store.display

    def __repr__(self) -> str:
        return f"<abeval store {self.display}>"

    def ingest(
        self,
        path: str | Path | BinaryIO,
        *,
        input_format: str | None = None,
        on_error: str = "abort",
        progress: Callable[[str], None] | None = None,
        fmt: str | None = None,
        epoch: str | None = None,
    ) -> IngestSummary:
        """Load one event file (all or nothing; loading it again adds nothing).

        ``path`` ``"-"`` reads standard input, and a binary stream (an open file,
        ``io.BytesIO``) is read too: both need ``input_format`` and are named
        ``-`` in the summary and the record. ``fmt`` is the former name of
        ``input_format``. ``epoch`` (``s``, ``ms``, ``us``) declares the unit of
        numeric timestamps; by default it is told by their magnitude."""
        from abeval.choices import EpochUnit, FileFormat, OnError
        from abeval.store.ingest import ingest_file

        _choice("on_error", on_error, get_args(OnError))
        mode = cast(OnError, on_error)
        input_format = input_format or fmt
        if epoch is not None:
            _choice("epoch", epoch, get_args(EpochUnit))
        if input_format is not None:
            _choice("input_format", input_format, get_args(FileFormat))
        if isinstance(path, str | Path) and str(path) != "-":
            return ingest_file(
                self._store,
                path,
                fmt=input_format,
                on_error=mode,
                progress=progress,
                epoch=epoch,
            )
        if input_format is None:
            raise OptionError(
                "input_format",
                None,
                "standard input has no file name to tell its format by; give csv, parquet or jsonl",
                allowed=get_args(FileFormat),
            )
        import sys

        from abeval.files import spooled

        stream = sys.stdin.buffer if isinstance(path, str | Path) else path
        with spooled(stream, input_format) as copy:
            return ingest_file(
                self._store,
                copy,
                fmt=input_format,
                on_error=mode,
                progress=progress,
                shown="-",
                epoch=epoch,
            )

    def experiments(self) -> Experiments:
        """What the store holds: each experiment's arms, users, events and time range."""
        from abeval.store.experiments import list_experiments
        from abeval.store.sources import source_experiments

        found = Experiments(list_experiments(self._store))
        in_place, problems = source_experiments(self._store)
        found += in_place
        found.problems = tuple(problems)
        return found

    def report(
        self, experiment: str, checked: ReportOptions | None = None, **options: Any
    ) -> ExperimentReport:
        """The report of ``experiment`` (what ``abeval report`` writes): ``options``
        as :func:`report_options` takes them, or options it ``checked`` already.
        In Jupyter the report shows as its HTML page."""
        from abeval.analysis.online import build_report
        from abeval.report.notebook import ShownReport

        if checked is not None and options:
            raise TypeError("give either checked options or keyword options, not both")
        if checked is None:
            from abeval.analysis.online_metrics import names_known

            self._use_recorded_metrics()
            with names_known():
                checked = report_options(**options)
        report = build_report(self._store, experiment, checked)
        return ShownReport.of(report)

    def power(
        self,
        experiment: str,
        *,
        metric: Names = None,
        mde: float | None = None,
        alpha: float | None = None,
        power: float = 0.8,
        sequential: bool = False,
        tuning_n: float = 5000.0,
        cuped_days: int | None = None,
    ) -> tuple[PowerInfo, ...]:
        """What ``experiment`` can detect now and the users a relative lift of
        ``mde`` (default: the recorded target, else 2%) needs, per metric (default
        the recorded primary metrics, else the report's) and treatment arm, planned
        from its own data at the α the decision uses (:meth:`plan`)."""
        return self.plan(
            experiment,
            metric=metric,
            mde=mde,
            alpha=alpha,
            power=power,
            sequential=sequential,
            tuning_n=tuning_n,
            cuped_days=cuped_days,
        ).power

    def plan(
        self,
        experiment: str,
        *,
        metric: Names = None,
        mde: float | None = None,
        alpha: float | None = None,
        power: float = 0.8,
        sequential: bool = False,
        tuning_n: float = 5000.0,
        cuped_days: int | None = None,
    ) -> Plan:
        """:meth:`power` with the guardrails' non-inferiority plan and the options
        it was planned under. An option left None takes the experiment's saved
        configuration (``abeval experiment set``), else the default."""
        from abeval.analysis.experiment_config import parse_config
        from abeval.analysis.online_metrics import parse_metrics
        from abeval.analysis.planning import plan_report
        from abeval.analysis.report_model import ReportOptions

        _share("power", power)
        _positive("tuning_n", tuning_n)
        if mde is not None:
            _positive("mde", mde)
        self._use_recorded_metrics()
        metrics = parse_metrics(metric, (), "metric", strict=True) if metric is not None else None
        given = parse_config(primary=metrics, alpha=alpha, cuped_days=cuped_days, target_mde=mde)
        base = ReportOptions(power=power, sequential=sequential, tuning_n=tuning_n, offline=False)
        return plan_report(self._store, experiment, given.options(base))

    def _use_recorded_metrics(self) -> None:
        """Make the store's team-defined metrics known, so that a name is checked
        against them as well as the built-ins."""
        from abeval.analysis.team_metrics import use_recorded

        with self._store.connect() as conn:
            use_recorded(conn)

    def agreement(
        self,
        experiments: str | Sequence[str] | None = None,
        *,
        alpha: float | None = None,
        seed: int | None = None,
        resamples: int | None = None,
        primary: Names = None,
        target_propensities: Mapping[str, str | Path] | None = None,
        backtest: bool = False,
    ) -> AgreementBoard:
        """The agreement board: how well each offline signal ranked the online lifts
        across ``experiments`` (default: all of the store's); ``backtest``: also
        forecast each experiment from the earlier ones. Each experiment is read
        under its saved configuration; ``primary`` and ``alpha``, when given,
        override its recorded primary metrics and α (the board's α is 0.05 then)."""
        from dataclasses import replace

        from abeval.analysis.agreement import agreement_board
        from abeval.analysis.online_metrics import DEFAULT_PRIMARY, parse_metrics

        self._use_recorded_metrics()
        metrics = parse_metrics(primary, DEFAULT_PRIMARY, "primary", strict=True)
        options = replace(
            _agreement_options(alpha, seed, resamples, metrics, primary, backtest),
            experiments=None if experiments is None else _names(experiments),
            target_propensities={k: str(v) for k, v in (target_propensities or {}).items()},
        )
        return agreement_board(self._store, options)

    def rejects(self, *, ingest: int | None = None, limit: int = 50) -> list[RejectedRow]:
        """The rows ``ingest`` (default: every ingest) rejected with
        ``on_error="skip"``, by ingest and line, at most ``limit``."""
        from abeval.store.rejects import rejected_rows

        _at_least("limit", limit, 1)
        return rejected_rows(self._store, ingest=ingest, limit=limit)

    def migrate(self) -> list[Migration]:
        """Create the schema or upgrade it to this version of abeval (open the store
        with ``migrate=False`` to see the steps); the steps applied, none when it is
        up to date."""
        from abeval.store.migrate import apply

        return apply(self._store)

    def metrics(self) -> tuple[MetricRow, ...]:
        """Every online metric, the built-in ones and then the store's team-defined
        ones, each with its definition."""
        from abeval.analysis.metric_records import list_metrics

        return list_metrics(self._store)

    def add_metrics(self, file: str | Path) -> Added:
        """Record the team-defined metrics a TOML file defines (all, or none when one
        is wrong)."""
        from abeval.analysis.metric_records import add_metrics

        return add_metrics(self._store, Path(file))

    def sources(self) -> list[Source]:
        """The tables read in place: name, table and mapping."""
        from abeval.store.sources import list_sources

        return list_sources(self._store)

    def add_source(
        self,
        name: str,
        checked: Mapping_ | None = None,
        *,
        table: str,
        replace: bool = False,
        **mapping: str | None,
    ) -> SourceCheck:
        """Read ``table`` in place as the source ``name``: check the mapping against
        it and record it (``replace``: the mapping of an existing source). The
        mapping as :func:`source_mapping` takes it, or the mapping it ``checked``."""
        from abeval.store.sources import add_source

        if checked is not None and mapping:
            raise TypeError("give either a checked mapping or its parts, not both")
        if checked is None:
            checked = source_mapping(table=table, **mapping)
        return add_source(self._store, name, table.strip(), checked, replace_existing=replace)

    def remove_source(self, name: str) -> Source:
        """Forget the source ``name`` (its table is not touched); the source forgotten."""
        from abeval.store.sources import remove_source

        return remove_source(self._store, name)

    def settings(self, experiment: str) -> tuple[ExperimentSettings, ExperimentConfig]:
        """What is recorded for ``experiment``: its settings (arms, control, split,
        window) and its saved configuration."""
        from abeval.analysis.experiment_config import show

        with self._refusing_sources(experiment):
            return show(self._store, experiment)

    def set(
        self,
        experiment: str,
        checked: ExperimentConfig | None = None,
        *,
        control: str | None = None,
        split: str | None = None,
        window_from: str | datetime | None = None,
        window_to: str | datetime | None = None,
        target_propensities: str | Path | None = None,
        **options: Any,
    ) -> tuple[ExperimentSettings, ExperimentConfig, TargetsRecorded | None]:
        """Record ``experiment``'s control arm, expected split (``control=50,treatment=50``),
        analysis window, target probabilities (a file) and the recordable options
        (:func:`experiment_config` takes them, or ``checked`` already), all or
        nothing. Returns the settings and the configuration now recorded, and
        what was recorded of the target's probabilities."""
        from abeval.analysis.experiment_config import record

        if checked is not None and options:
            raise TypeError("give either checked options or keyword options, not both")
        config = checked if checked is not None else experiment_config(**options)
        start = _bound("window_from", window_from, end=False)
        end = _bound("window_to", window_to, end=True)
        if start is not None and end is not None and not start < end:
            raise OptionError("window_to", None, "must come after --from")
        targets = None
        if target_propensities is not None:
            from abeval.analysis.ope_file import target_file

            targets = target_file(target_propensities)
        with self._refusing_sources(experiment):
            return record(
                self._store, experiment, (control, split, start, end), config, targets=targets
            )

    def unset(
        self, experiment: str, names: Iterable[str]
    ) -> tuple[ExperimentSettings, ExperimentConfig]:
        """Forget the recorded settings ``names`` (``control``, ``split``, ``window``
        or a recordable option such as ``guardrails``) of ``experiment``; the
        settings and the configuration left."""
        from abeval.analysis.experiment_config import ExperimentConfig, record

        with self._refusing_sources(experiment):
            settings, config, _ = record(
                self._store, experiment, (None, None, None, None), ExperimentConfig(), names
            )
        return settings, config

    def _refusing_sources(self, experiment: str) -> Any:
        """A context in which an unknown ``experiment`` that a source reads in
        place is refused as such (its settings cannot be recorded)."""
        from contextlib import contextmanager

        from abeval.errors import NotFoundError
        from abeval.store.sources import refuse_settings

        @contextmanager
        def refusing() -> Any:
            try:
                yield
            except NotFoundError:
                refuse_settings(self._store, experiment)
                raise

        return refusing()

    def record_evaluation(self, file: str | Path) -> RecordedEvaluation:
        """Record an evaluation that :func:`evaluate` with ``experiment`` finished
        but could not record (it kept it in ``file``), its id and time unchanged."""
        from abeval.analysis.evaluate.record import record_kept

        return record_kept(self._store, file)

    def forecast(
        self,
        evidence: Evidence | None = None,
        checked: ForecastOptions | None = None,
        *,
        experiment: str | None = None,
        target_propensities: str | Path | None = None,
        board: AgreementBoard | None = None,
        **options: Any,
    ) -> ForecastReport:
        """A candidate's online lift, forecast from its offline ``evidence``
        (:func:`forecast_evidence`) and the store's past experiments; without
        ``evidence``, from the off-policy estimate of the candidate's
        ``target_propensities`` (a file) on ``experiment``'s production logs.
        ``options`` as :func:`forecast_options` takes them, or options it ``checked``
        already; ``board``: the store's agreement board when it is built already."""
        from abeval.analysis.forecast import build_forecast

        if checked is not None and options:
            raise TypeError("give either checked options or keyword options, not both")
        checked = checked if checked is not None else forecast_options(**options)
        if evidence is None:
            from abeval.analysis.forecast_candidate import ope_evidence

            if target_propensities is None:
                raise OptionError("target_propensities", None, "give the candidate's evidence")
            if experiment is None:
                raise OptionError("experiment", None, "name the experiment of the production logs")
            evidence = ope_evidence(self._store, experiment, target_propensities, checked.alpha)
        return build_forecast(self._store, evidence, checked, board)


def _names(experiments: str | Sequence[str]) -> tuple[str, ...]:
    """Experiment names, each whole: a string is one name (commas included)."""
    return (experiments,) if isinstance(experiments, str) else tuple(experiments)


def _agreement_options(
    alpha: float | None,
    seed: int | None,
    resamples: int | None,
    metrics: tuple[str, ...],
    primary: Names,
    backtest: bool,
) -> AgreementOptions:
    """The board's options, each checked (an :class:`OptionError` naming it)."""
    from abeval.analysis.agreement import AgreementOptions

    defaults = AgreementOptions()
    alpha_given = alpha is not None
    alpha = defaults.alpha if alpha is None else alpha
    _share("alpha", alpha)
    seed = defaults.seed if seed is None else seed
    _at_least("seed", seed, 0)
    resamples = defaults.resamples if resamples is None else resamples
    if not MIN_RESAMPLES <= resamples <= MAX_RESAMPLES:
        allowed = f"{MIN_RESAMPLES:,} to {MAX_RESAMPLES:,}"
        raise OptionError("resamples", resamples, f"give {allowed}", allowed=allowed)
    if not metrics:
        raise OptionError("primary", primary, "no metric given; name them as ctr,conversion")
    return AgreementOptions(
        alpha=alpha,
        seed=seed,
        resamples=resamples,
        primary=metrics,
        backtest=backtest,
        primary_given=primary is not None,
        alpha_given=alpha_given,
    )


def agreement_history(
    history: str | Path,
    *,
    alpha: float | None = None,
    seed: int | None = None,
    resamples: int | None = None,
    primary: Names = None,
    backtest: bool = False,
) -> AgreementBoard:
    """The agreement board over a history file (CSV or Parquet, the columns of
    ``abeval forecast --history``) instead of a store; ``primary``: the file's
    online metrics to keep (default all of them)."""
    from abeval.analysis.agreement_history import history_board
    from abeval.analysis.online_metrics import DEFAULT_PRIMARY

    metrics: tuple[str, ...] = DEFAULT_PRIMARY
    if primary is not None:
        parts = primary.split(",") if isinstance(primary, str) else list(primary)
        metrics = tuple(n.strip() for n in parts if n.strip())
    return history_board(
        history, _agreement_options(alpha, seed, resamples, metrics, primary, backtest)
    )


def source_mapping(
    *,
    table: str,
    columns: str | None = None,
    event_types: str | None = None,
    experiment_column: str | None = None,
    experiment: str | None = None,
    attributes: str | None = None,
) -> Mapping_:
    """A source's mapping, checked, written as ``abeval source add`` takes it: the
    table's column for each field named otherwise (``columns="user_id=uid,ts=t"``),
    its value for each event type named otherwise (``event_types="click=clk"``), the
    column naming each row's experiment or the table's one ``experiment``, and the
    other columns to keep as attributes (``attributes="country,device=dev"``)."""
    from abeval.store.source_mapping import (
        Mapping,
        parse_attributes,
        parse_columns,
        parse_event_types,
    )

    _given("table", bool(table.strip()), "name a table or files")
    mapped = parse_columns(columns)
    if experiment_column is not None:
        _given(
            "experiment_column",
            "experiment" not in mapped,
            "give the experiment column once: here or in --map experiment=COLUMN",
        )
        _given("experiment_column", bool(experiment_column.strip()), "name a column")
        mapped["experiment"] = experiment_column.strip()
    if experiment is not None:
        _given("experiment", bool(experiment.strip()), "name the table's experiment")
        _given(
            "experiment",
            "experiment" not in mapped,
            "a table has an experiment column or one experiment, not both",
        )
    return Mapping(
        columns=mapped,
        event_types=parse_event_types(event_types),
        experiment=experiment.strip() if experiment is not None else None,
        attributes=parse_attributes(attributes),
    )


def experiment_config(
    *, cap: Sequence[str] | Mapping[str, float] | None = None, **options: Any
) -> ExperimentConfig:
    """The recordable options (``abeval experiment set``: ``primary``, ``secondary``,
    ``guardrails``, ``cap``, ``cuped_days``, ``target_mde``, ``alpha``,
    ``correction``, ``plan_users``, ``plan_days``) as given, None where not given,
    parsed and checked: an :class:`OptionError` names the first invalid one."""
    from abeval.analysis.experiment_config import parse_config

    return parse_config(caps=cap or [], **options)


def forecast_options(
    *,
    signal: str | None = None,
    primary: Names = None,
    alpha: float | None = None,
    mde: float = 0.02,
    assurance: float = 0.8,
    users_per_day: float | None = None,
    history: str | Path | None = None,
) -> ForecastOptions:
    """The forecast's options as ``abeval forecast`` takes them: the offline
    ``signal`` (default: the one the agreement board ranks best), the online
    metrics (default ctr,conversion and each past experiment's recorded primary
    ones), ``alpha`` (default 0.05, each past experiment at its recorded α),
    the target lift ``mde``, the ``assurance`` a test is planned for, the new
    test's ``users_per_day`` and a ``history`` file instead of the store."""
    from abeval.analysis.forecast import ForecastOptions

    alpha_given = alpha is not None
    alpha = 0.05 if alpha is None else alpha
    _share("alpha", alpha)
    _share("assurance", assurance)
    if not (-1 < mde < math.inf and mde != 0):
        raise OptionError("mde", mde, "give a relative lift such as 0.02")
    if users_per_day is not None:
        _positive("users_per_day", users_per_day)
    return ForecastOptions(
        signal=signal,
        primary=metric_names(primary, "primary"),
        alpha=alpha,
        mde=mde,
        assurance=assurance,
        users_per_day=users_per_day,
        history=None if history is None else str(history),
        primary_given=primary is not None,
        alpha_given=alpha_given,
    )


def forecast_evidence(
    *,
    offline_lift: float | None = None,
    offline_se: float | None = None,
    truth: str | Path | None = None,
    recommendations: Mapping[str, str | Path] | None = None,
    k: str | Sequence[int] = (5, 10),
    alpha: float = 0.05,
) -> Evidence:
    """A candidate's offline evidence for :meth:`Store.forecast`: its lift over
    production as a number (``offline_lift`` and its standard error ``offline_se``),
    or evaluated on held-out ``truth`` from the two runs of ``recommendations``
    (production named ``control``, else the first; the candidate the other)."""
    from abeval.analysis.forecast_candidate import evaluation_evidence, typed_evidence

    if truth is None and not recommendations:
        if offline_lift is None or offline_se is None:
            missing = "offline_lift" if offline_lift is None else "offline_se"
            raise OptionError(missing, None, "give offline_lift with offline_se")
        if not math.isfinite(offline_lift):
            raise OptionError("offline_lift", offline_lift, "give a finite relative lift")
        if not 0 <= offline_se < math.inf:
            raise OptionError("offline_se", offline_se, "give a standard error, 0 or more")
        return typed_evidence(offline_lift, offline_se)
    if truth is None:
        raise OptionError("truth", None, "give the held-out truth the runs are evaluated on")
    if recommendations is None or len(recommendations) != 2:
        raise OptionError("recommendations", None, "give two runs: production's, the candidate's")
    ks = cutoffs(k) if isinstance(k, str) else tuple(k)
    if not ks or not all(v > 0 for v in ks):
        raise OptionError("k", k, "give cutoffs such as 5,10")
    return evaluation_evidence(truth, dict(recommendations), k=ks, alpha=alpha)


def forecast_history(
    history: str | Path,
    evidence: Evidence,
    checked: ForecastOptions | None = None,
    **options: Any,
) -> ForecastReport:
    """:meth:`Store.forecast` from a history file (CSV or Parquet: experiment,
    signal, offline_lift, offline_se, online_lift, online_se; optional metric,
    arm, date, users) instead of a store."""
    from dataclasses import replace

    from abeval.analysis.forecast import build_forecast

    if checked is not None and options:
        raise TypeError("give either checked options or keyword options, not both")
    checked = checked if checked is not None else forecast_options(**options)
    return build_forecast(None, evidence, replace(checked, history=str(history)))


def metric_names(
    text: Names, parameter: str = "primary", *, default: bool = True
) -> tuple[str, ...]:
    """``"ctr,conversion"`` (or a list) → the online metrics' names, checked (an
    :class:`OptionError` naming ``parameter`` for a misspelt one; a lower-case name
    not known yet is kept, as it may be a team-defined metric of a store). None
    gives the default primary metrics (ctr, conversion), or none unless ``default``."""
    from abeval.analysis.online_metrics import DEFAULT_PRIMARY, parse_metrics

    return parse_metrics(text, DEFAULT_PRIMARY if default else (), parameter)


def named_models(texts: Sequence[str]) -> dict[str, str]:
    """``[NAME=]FILE`` texts (``abeval evaluate -r``) → model name → file, named
    after the files where no name is given (docs/usage.md#named-models); a
    ValueError says what is wrong with one."""
    from abeval.files import named_models as parse

    return parse(texts)


def model_argument(
    text: str, *, what: str = "model name", form: str = "NAME=PATH", must_exist: bool = True
) -> tuple[str | None, str]:
    """One ``NAME=FILE`` text → (name or None, file), split as :func:`named_models`
    splits; a ValueError names ``what`` and ``form`` when it cannot be."""
    from abeval.files import model_argument as parse

    return parse(text, what=what, form=form, must_exist=must_exist)


def parse_bound(value: str, *, end: bool) -> datetime:
    """An instant as ``--from``/``--to`` take it (ISO 8601, UTC unless it has a
    zone; a date as ``end``: through that day) → a naive UTC datetime; ValueError
    when it is none."""
    from abeval.store.population import parse_bound as parse

    return parse(value, end=end)


def plan_power(
    baseline: float,
    *,
    sd: float | None = None,
    mde: float | None = None,
    users: int | None = None,
    arms: int = 2,
    alpha: float = 0.05,
    power: float = 0.8,
    sequential: bool = False,
    tuning_n: float = 5000.0,
) -> PowerResult:
    """Power by hand, as ``abeval power --baseline``: the users a relative lift of
    ``mde`` needs, or (``users`` per arm) the lift detectable; a proportion when
    ``sd`` is None, else a mean with that standard deviation per user."""
    from abeval.stats import minimum_detectable_effect, required_users

    if (mde is None) == (users is None):
        raise OptionError("mde", mde, "give exactly one of mde or users")
    variance = baseline * (1 - baseline) if sd is None else sd * sd
    if mde is not None:
        return required_users(
            baseline,
            variance,
            mde,
            alpha=alpha,
            power=power,
            n_arms=arms,
            sequential=sequential,
            tuning_n=tuning_n,
        )
    assert users is not None
    return minimum_detectable_effect(
        users, baseline, variance, alpha=alpha, power=power, sequential=sequential,
        tuning_n=tuning_n,
    )  # fmt: skip


def demo(out_dir: str | Path, *, users: int = 30_000, seed: int = 7) -> Iterator[Any]:
    """``abeval demo``, step by step: simulate an experiment into ``out_dir``, load
    it into a fresh store there, report on it, then simulate a history of
    experiments, record their evaluations, build the agreement board and
    forecast a candidate. Yields, as it goes, a line saying what was done (a
    ``str``) or the experiment's report (the CLI prints its text)."""
    from abeval.simulate.walkthrough import run_demo

    return run_demo(Path(out_dir), users, seed)


def report_options(
    *,
    control: str | None = None,
    alpha: float | None = None,
    correction: str | None = None,
    relative_interval: str = "fieller",
    sequential: bool = False,
    tuning_n: float = 5000.0,
    cuped_days: int | None = None,
    segment: str | None = None,
    primary: Names = None,
    guardrails: Names = None,
    secondary: Names = None,
    target_mde: float | None = None,
    k: str | Sequence[int] = (5, 10),
    offline: bool = True,
    window_from: str | datetime | None = None,
    window_to: str | datetime | None = None,
    cap: Sequence[str] | Mapping[str, float] | None = None,
    target_propensities: str | Path | None = None,
    ope_cap: float = 100.0,
    ope: bool = True,
    plan_users: int | None = None,
    plan_days: int | None = None,
) -> ReportOptions:
    """The report's options, checked: the CLI's options under their Python names
    (``--from`` is ``window_from``, ``--cap`` takes ``{"revenue_per_user": 0.99}``
    too). An :class:`OptionError` names the first invalid one.

    The options ``abeval experiment set`` records (primary, secondary and
    guardrail metrics, guardrails as ``METRIC[:MARGIN]``, caps, CUPED days, target
    MDE, alpha, correction, the planned horizon) are None when not given: the
    report then takes the experiment's saved configuration, else the default
    (docs/usage.md#saved-configuration)."""
    from abeval.analysis.experiment_config import parse_config
    from abeval.analysis.ope import OpeOptions
    from abeval.analysis.report_model import ReportOptions
    from abeval.choices import RelativeIntervalChoice

    _choice("relative_interval", relative_interval, get_args(RelativeIntervalChoice))
    _positive("tuning_n", tuning_n)
    _positive("ope_cap", ope_cap)
    start = _bound("window_from", window_from, end=False)
    end = _bound("window_to", window_to, end=True)
    if start is not None and end is not None and not start < end:
        raise OptionError("window_to", window_to, "must come after the start of the window")
    given = parse_config(
        primary=primary,
        secondary=secondary,
        guardrails=guardrails,
        caps=cap,
        cuped_days=cuped_days,
        target_mde=target_mde,
        alpha=alpha,
        correction=correction,
        plan_users=plan_users,
        plan_days=plan_days,
    )
    return given.options(
        ReportOptions(
            control=control,
            relative_interval=relative_interval,  # type: ignore[arg-type]
            sequential=sequential,
            tuning_n=tuning_n,
            segment=segment,
            offline_ks=cutoffs(k),
            offline=offline,
            window_from=start,
            window_to=end,
            ope=OpeOptions(ope, ope_cap, str(target_propensities) if target_propensities else None),
        )
    )


def cutoffs(k: str | Iterable[int], parameter: str = "k") -> tuple[int, ...]:
    """``"5,10"`` or ``[5, 10]`` → sorted cutoffs; an :class:`OptionError` unless
    each is a whole number of at least 1."""
    from abeval.metrics.base import parse_cutoffs

    text = k if isinstance(k, str) else ",".join(str(x) for x in k)
    try:
        return parse_cutoffs(text)
    except ValueError as exc:
        raise OptionError(parameter, k, str(exc)) from None


def evaluate(
    truth: Any,
    runs: Mapping[str, Any] | Sequence[Any] = (),
    *,
    k: str | Sequence[int] = (5, 10),
    metrics: Names = None,
    predictions: Mapping[str, Any] | Sequence[Any] = (),
    ap_denominator: str | None = None,
    gain: str | None = None,
    empty: str | None = None,
    duplicates: str | None = None,
    experiment: str | None = None,
    db: str | Path | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
    **options: Any,
) -> EvaluationResult:
    """Score recommendation runs against held-out truth, as ``abeval evaluate``:
    ``runs`` maps a model name to its run (a file path, a pandas DataFrame or an
    Arrow table; the first is the baseline); ``truth`` likewise. The ranking
    conventions ``ap_denominator`` (R, min_rk, hits), ``gain`` (linear, exp2,
    binary), ``empty`` (skip, zero) and ``duplicates`` (error, dedupe) default to
    trec_eval's. Other options (``alpha``, ``resamples``, ``seed``, ``missing``,
    ``min_relevance``, ``items``, ``history``, ``per_user``, ``baseline``) as
    :func:`abeval.analysis.evaluate.evaluate` takes them.

    With ``experiment``, every run is named after an arm of that experiment of
    the store ``db``, its control is the baseline, and the evaluation is recorded
    there (``result.recorded``); ``on_lock_wait`` is told, in a sentence, when the
    record waits for a store another process holds."""
    import tempfile

    chosen = {"ap_denominator": ap_denominator, "gain": gain, "empty": empty}
    chosen["duplicates"] = duplicates
    if any(v is not None for v in chosen.values()):
        from abeval.metrics import Conventions

        given = {name: value for name, value in chosen.items() if value is not None}
        options["conventions"] = Conventions(**given)  # type: ignore[arg-type]
    _share("alpha", options.get("alpha", 0.05))
    if db is not None and experiment is None:
        raise OptionError("db", str(db), "a store records an evaluation: give experiment too")
    ks = cutoffs(k)
    with tempfile.TemporaryDirectory(prefix="abeval-") as folder:
        tables = _Tables(Path(folder))
        truth_path = tables.path("truth", truth)
        recs = tables.named("recommendations", runs)
        preds = tables.named("predictions", predictions)
        if experiment is not None:
            from abeval.analysis.evaluate.record import evaluate_for_experiment

            return evaluate_for_experiment(
                None if db is None else str(db),
                experiment,
                truth_path,
                recs if isinstance(recs, dict) else dict(zip(_run_names(recs), recs, strict=True)),
                predictions=preds if isinstance(preds, dict) else {},
                on_lock_wait=on_lock_wait,
                k=ks,
                metrics=metrics,
                **options,
            )
        from abeval.analysis.evaluate import evaluate as run_evaluation

        return run_evaluation(truth_path, recs, predictions=preds, k=ks, metrics=metrics, **options)


def _run_names(paths: Sequence[str | Path]) -> list[str]:
    """The models' names of runs given as a list: their files' stems."""
    from abeval.files import model_names

    return model_names(paths)


class _Tables:
    """Data frames and Arrow tables written as Parquet files for the file readers."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, name: str, data: Any) -> str | Path:
        if isinstance(data, str | Path):
            return data
        import duckdb

        target = self.folder / f"{name}.parquet"
        con = duckdb.connect(":memory:")
        try:
            con.register("frame", data)
            con.execute(f"COPY frame TO '{target}' (FORMAT parquet)")
        except (duckdb.Error, ValueError, TypeError) as exc:
            raise OptionError(
                name,
                type(data).__name__,
                f"give a file path, a pandas DataFrame or an Arrow table ({exc})",
            ) from None
        finally:
            con.close()
        return target

    def named(self, what: str, data: Mapping[str, Any] | Sequence[Any]) -> Any:
        if isinstance(data, Mapping):
            return {name: self.path(f"{what}-{i}", v) for i, (name, v) in enumerate(data.items())}
        return [self.path(f"{what}-{i}", v) for i, v in enumerate(data)]


def _given(parameter: str, ok: bool, reason: str) -> None:
    """An :class:`OptionError` naming ``parameter`` (no value) unless ``ok``."""
    if not ok:
        raise OptionError(parameter, None, reason)


def _choice(parameter: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise OptionError(parameter, value, f"choose from {', '.join(allowed)}", allowed=allowed)


def _share(parameter: str, value: float) -> None:
    if not 0 < value < 1:
        raise OptionError(
            parameter, value, "must be between 0 and 1 (exclusive)", allowed="0 < value < 1"
        )


def _positive(parameter: str, value: float) -> None:
    if not 0 < value < math.inf:
        raise OptionError(parameter, value, "must be a number above 0", allowed="a number above 0")


def _at_least(parameter: str, value: int, least: int) -> None:
    if not value >= least:
        raise OptionError(parameter, value, f"must be {least} or more", allowed=f">= {least}")


def _bound(parameter: str, value: str | datetime | None, *, end: bool) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):  # the store's timestamps are naive UTC
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    from abeval.store.population import parse_bound

    try:
        return parse_bound(value, end=end)
    except ValueError as exc:
        raise OptionError(parameter, value, str(exc)) from None
