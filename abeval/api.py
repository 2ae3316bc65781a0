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
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, cast, get_args

from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard, AgreementOptions
    from abeval.analysis.evaluate.results import EvaluationResult
    from abeval.analysis.planning import Plan
    from abeval.analysis.report_model import ExperimentReport, PowerInfo, ReportOptions
    from abeval.store.engine import Store as EngineStore
    from abeval.store.experiments import ExperimentSummary
    from abeval.store.ingest import IngestSummary

__all__ = ["Experiments", "Store", "agreement_history", "evaluate", "open"]

Names = str | Sequence[str] | None

#: Bounds of the agreement board's resamples: fewer makes a percentile interval
#: meaningless, more only costs time and memory (resamples × pairs per signal).
MIN_RESAMPLES, MAX_RESAMPLES = 100, 100_000


def open(db: str | Path | None = None, *, read_only: bool = False) -> Store:
    """Open the store ``db`` (a DuckDB file, a SQLAlchemy URL or a Spark Connect
    URL; default ``$ABEVAL_DB``, else ``./abeval.duckdb``). Writable by default
    (a missing DuckDB file is created); ``read_only=True`` for analysis only."""
    from abeval.store import open_store

    return Store(open_store(None if db is None else str(db), read_only=read_only))


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
    **options: Any,
) -> EvaluationResult:
    """Score recommendation runs against held-out truth, as ``abeval evaluate``:
    ``runs`` maps a model name to its run (a file path, a pandas DataFrame or an
    Arrow table; the first is the baseline); ``truth`` likewise. Other options
    (``alpha``, ``resamples``, ``seed``, ``missing``, ``min_relevance``,
    ``conventions``, ``items``, ``history``, ``per_user``, ``baseline``) as
    :func:`abeval.analysis.evaluate.evaluate` takes them."""
    import tempfile

    from abeval.analysis.evaluate import evaluate as run_evaluation

    _share("alpha", options.get("alpha", 0.05))
    ks = cutoffs(k)
    with tempfile.TemporaryDirectory(prefix="abeval-") as folder:
        tables = _Tables(Path(folder))
        truth_path = tables.path("truth", truth)
        recs = tables.named("recommendations", runs)
        preds = tables.named("predictions", predictions)
        return run_evaluation(truth_path, recs, predictions=preds, k=ks, metrics=metrics, **options)


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
