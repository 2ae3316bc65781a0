"""``abeval forecast``: a candidate's online lift forecast from its offline lift
and the history of past experiments (docs/usage.md#forecast-the-online-lift,
model in docs/metrics.md#forecasting-the-online-lift).

The history is the store's (the agreement board's pairs) or a file
(``--history``). Per online metric, the signal is the one asked for, else the
board's best predictor of the metric, else the next the board ranks that the
candidate has a lift on and the model can fit (of a file: its only signal);
the choice, the traffic and the go / no-go are
:mod:`abeval.analysis.forecast_choice`'s. Each experiment enters once:
the arms of one experiment share its control, so their lifts are averaged and
so are their standard errors (the standard error of the mean of positively
correlated lifts is at most that: conservative). The fit and the forecast come
from :mod:`abeval.stats.forecast`; the users a test needs from
:mod:`abeval.stats.assurance`, with the lift's standard error per √user the
median over the history's tests of known size.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval import __version__
from abeval.analysis.forecast_candidate import Evidence
from abeval.analysis.forecast_choice import (
    MAX_DAYS,
    Recommendation,
    SignalChoice,
    Traffic,
    best_on_board,
    board_key,
    recommend,
    signal_choice,
    traffic,
)
from abeval.analysis.forecast_history import HistoryEntry, read_history
from abeval.analysis.online_metrics import BUILTIN_CATALOG, Catalog
from abeval.errors import AbevalError, close_matches
from abeval.stats.assurance import Assurance, users_for_assurance
from abeval.stats.forecast import (
    MIN_EXPERIMENTS,
    Forecast,
    ForecastFit,
    HistoryRow,
    fit,
    predict,
)
from abeval.stats.forecast_influence import with_influence
from abeval.stats.results import NOT_IN_JSON, JsonResult

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard, SignalSummary
    from abeval.store.database import Database

SCHEMA_VERSION = "1.0"


@dataclass(frozen=True)
class ForecastOptions:
    """What ``abeval forecast`` lets a user choose."""

    signal: str | None = None
    primary: tuple[str, ...] = ("ctr", "conversion")
    alpha: float = 0.05
    mde: float = 0.02
    assurance: float = 0.8
    users_per_day: float | None = None
    #: The longest test the go / no-go calls feasible, in days.
    max_days: float = MAX_DAYS
    history: str | None = None
    #: ``--primary`` / ``--alpha`` given: they override each past experiment's
    #: recorded primary metrics and α (otherwise its saved configuration is read,
    #: and a metric only some experiments record as primary is forecast too).
    primary_given: bool = False
    alpha_given: bool = False


@dataclass(frozen=True)
class BandPoint(JsonResult):
    """The forecast for a candidate whose offline lift is ``offline_lift``
    (measured with the candidate's standard error): ``point`` and its prediction
    interval [``low``, ``high``]."""

    offline_lift: float
    point: float
    low: float
    high: float


#: Offline lifts the prediction band is computed at.
BAND_POINTS = 41


@dataclass(frozen=True)
class MetricForecast(JsonResult):
    """One online metric's forecast from one signal: why that signal
    (``choice``), what the model learned (``fit``, over the ``experiments``:
    ``points``, one per experiment), the forecast, the test it needs
    (``assurance``: users; ``days`` at ``users_per_day``, from ``traffic``), the
    go / no-go (``recommendation``) and the forecast across offline lifts
    (``band``, for the chart)."""

    metric: str
    signal: str
    experiments: tuple[str, ...]
    fit: ForecastFit
    forecast: Forecast
    assurance: Assurance | None
    lift_se_per_sqrt_user: float | None
    users_per_day: float | None
    days: float | None
    choice: SignalChoice | None = None
    traffic: Traffic | None = None
    recommendation: Recommendation | None = None
    points: tuple[HistoryRow, ...] = ()
    band: tuple[BandPoint, ...] = ()


@dataclass(frozen=True)
class ForecastReport(JsonResult):
    """Everything ``abeval forecast`` prints."""

    schema_version: str
    abeval_version: str
    generated_at: str
    history: str
    candidate: str
    alpha: float
    mde: float
    target_assurance: float
    forecasts: tuple[MetricForecast, ...]
    notes: tuple[str, ...]
    #: The store's metrics (built-in ones for a history file), for the presenters'
    #: labels; not in the JSON document.
    catalog: Catalog = field(
        default=BUILTIN_CATALOG, repr=False, compare=False, metadata=NOT_IN_JSON
    )


def _one_per_experiment(
    entries: Sequence[HistoryEntry],
) -> list[tuple[str, HistoryRow, float | None]]:
    """(experiment, row, users) with the arms of an experiment averaged."""
    groups: dict[str, list[HistoryEntry]] = {}
    for e in entries:
        groups.setdefault(e.experiment, []).append(e)
    out = []
    for name, group in groups.items():
        users = [e.users for e in group if e.users is not None]
        row = HistoryRow(
            offline_lift=statistics.fmean(e.offline_lift for e in group),
            offline_se=statistics.fmean(e.offline_se for e in group),
            online_lift=statistics.fmean(e.online_lift for e in group),
            online_se=statistics.fmean(e.online_se for e in group),
            experiment=name,
        )
        out.append((name, row, statistics.fmean(users) if users else None))
    return out


def _unknown_signal(signal: str, known: Sequence[str], where: str) -> AbevalError:
    ranked = close_matches(signal, known, n=len(known), cutoff=0.0)
    ranked += [s for s in sorted(known) if s not in ranked]
    return AbevalError(
        f"{{signal}} {signal}: {where} has no such signal; it has {', '.join(ranked)}",
        parameters=("signal",),
    )


def _candidate_signals(
    metric: str,
    entries: Sequence[HistoryEntry],
    ranking: Sequence[str] | None,
    evidence: Evidence,
    o: ForecastOptions,
    where: str,
) -> list[str]:
    """The asked signal, else the signals the candidate has, best ranked first."""
    signals = list(dict.fromkeys(e.signal for e in entries))
    if o.signal is not None:
        if o.signal not in signals:
            raise _unknown_signal(o.signal, signals, where)
        if evidence.lift(o.signal) is None:
            raise AbevalError(
                f"{{signal}} {o.signal}: the candidate's evaluation has no lift on it; it has "
                f"{', '.join(evidence.lifts)}",
                parameters=("signal",),
            )
        return [o.signal]
    usable = [s for s in (ranking or signals) if s in signals and evidence.lift(s) is not None]
    if not usable:
        raise AbevalError(
            f"{where} and the candidate's evaluation share no signal for {metric}: the history "
            f"has {', '.join(sorted(signals))}; the evaluation {', '.join(evidence.lifts)}"
        )
    if ranking is None and len(usable) > 1:  # a file: no board to rank its signals
        raise AbevalError(
            f"{where} has several signals for {metric} ({', '.join(sorted(usable))}); "
            "name one with {signal}",
            parameters=("signal",),
        )
    return usable


def forecast_metric(
    metric: str,
    signal: str,
    entries: Sequence[HistoryEntry],
    evidence: Evidence,
    users_per_day: float | None,
    o: ForecastOptions,
) -> MetricForecast:
    """Fit the model to one (metric, signal)'s history and forecast the candidate."""
    per_experiment = _one_per_experiment([e for e in entries if e.signal == signal])
    rows = [r for _, r, _ in per_experiment]
    fitted = history_fit(signal, entries, o.alpha)
    lift = evidence.lift(signal)
    assert lift is not None
    forecast = with_influence(rows, predict(fitted, lift[0], lift[1], o.alpha, o.mde))
    scales = [r.online_se * math.sqrt(u) for _, r, u in per_experiment if u is not None]
    scale = statistics.median(scales) if scales else None
    assurance = None
    days = None
    if scale is not None and forecast.status == "ok":
        # at the α the decision uses (α over the primary metrics, Holm's smallest
        # step) and under its default basis: α spent over a look a day
        alpha = o.alpha / max(len(o.primary), 1)
        assurance = users_for_assurance(
            forecast, scale, o.assurance, alpha, spending=True, users_per_day=users_per_day
        )
        if assurance.users is not None and users_per_day:
            days = assurance.users / users_per_day
    return MetricForecast(
        metric=metric,
        signal=signal,
        experiments=tuple(name for name, _, _ in per_experiment),
        fit=fitted,
        forecast=forecast,
        assurance=assurance,
        lift_se_per_sqrt_user=scale,
        users_per_day=users_per_day,
        days=days,
        recommendation=recommend(
            forecast.p_positive,
            forecast.p_above_mde,
            None if assurance is None else assurance.users,
            days,
            o.max_days,
        ),
        points=tuple(rows),
        band=prediction_band(fitted, rows, forecast, o.alpha),
    )


def history_fit(signal: str, entries: Sequence[HistoryEntry], alpha: float) -> ForecastFit:
    """The model fitted to one signal's history (one row per experiment)."""
    per_experiment = _one_per_experiment([e for e in entries if e.signal == signal])
    return fit([r for _, r, _ in per_experiment], alpha)


def prediction_band(
    fitted: ForecastFit, rows: Sequence[HistoryRow], forecast: Forecast, alpha: float
) -> tuple[BandPoint, ...]:
    """The forecast at :data:`BAND_POINTS` offline lifts across the history's and
    the candidate's, each measured with the candidate's standard error (so the
    candidate's forecast lies on it); empty without a forecast."""
    if forecast.status != "ok" or not rows:
        return ()
    xs = [r.offline_lift for r in rows] + [forecast.offline_lift, 0.0]
    lo, hi = min(xs), max(xs)
    if hi - lo <= 0:
        return ()
    out = []
    for i in range(BAND_POINTS):
        x = lo + (hi - lo) * i / (BAND_POINTS - 1)
        p = predict(fitted, x, forecast.offline_se, alpha)
        if p.point is not None and p.interval is not None:
            out.append(BandPoint(x, p.point, p.interval[0], p.interval[1]))
    return tuple(out)


def _passed_over(
    best: SignalSummary | None, fits: Mapping[str, ForecastFit], chosen: MetricForecast
) -> str | None:
    """Why the board's best signal was not the one forecast from (None when it was);
    ``fits``: the model fitted to each signal tried."""
    if best is None or board_key(best) == chosen.signal:
        return None
    found = fits.get(board_key(best))
    if found is None:
        return "no_lift"  # the candidate's evidence, or the history, has no lift on it
    return found.status


def build_forecast(
    store: Database | None,
    evidence: Evidence,
    o: ForecastOptions,
    board: AgreementBoard | None = None,
) -> ForecastReport:
    """The forecast per online metric (module docstring). ``store`` is read when
    ``o.history`` is None; ``board``, the store's agreement board when the caller
    has built it already (:func:`abeval.analysis.forecast_store.store_history`)."""
    notes: list[str] = []
    if o.history is not None:
        entries: Sequence[HistoryEntry] = read_history(o.history)
        where = f"{o.history}"
        rates: dict[str, tuple[tuple[str, float], ...]] = {}
        metrics = list(dict.fromkeys(e.metric for e in entries))
        ranking: dict[str, tuple[str, ...]] | None = None
        board_rows: tuple[SignalSummary, ...] | None = None
        catalog = BUILTIN_CATALOG  # a file belongs to no store
    else:
        from abeval.analysis.forecast_store import store_history

        assert store is not None
        found = store_history(store, o, board)
        entries = found.entries
        where = f"the store {store.display}"
        rates = found.rates
        recorded = () if o.primary_given else tuple(e.metric for e in entries)
        metrics = [
            m for m in dict.fromkeys(o.primary + recorded) if any(e.metric == m for e in entries)
        ]
        ranking = found.ranking
        board_rows = found.rows
        catalog = found.catalog
        if found.skipped:
            notes.append(
                f"{len(found.skipped)} pair(s) without an offline interval left out: "
                + ", ".join(found.skipped[:5])
                + (" …" if len(found.skipped) > 5 else "")
            )
    if not entries or not metrics:
        raise AbevalError(
            f"{where} has no past experiment with an offline signal; the forecast needs "
            f"{MIN_EXPERIMENTS} or more (record evaluations with `abeval evaluate --experiment`, "
            "or give {history} FILE)",
            parameters=("history",),
        )
    results = []
    for metric in metrics:
        of_metric = [e for e in entries if e.metric == metric]
        order = None if ranking is None else ranking.get(metric, ())
        signals = _candidate_signals(metric, of_metric, order, evidence, o, where)
        speed = traffic(metric, o.users_per_day, rates.get(metric, ()))
        # the best ranked signal the model fits a slope to (too few experiments, noise
        # only: next); else the best with an intercept-only forecast; only that one
        # forecast (its influence and band cost far more than the fits)
        fits = {s: history_fit(s, of_metric, o.alpha) for s in signals}
        fitted = [s for s in signals if fits[s].status == "ok"]
        sloped = [s for s in fitted if fits[s].model == "slope"]
        signal = (sloped or fitted or list(signals))[0]
        chosen = forecast_metric(metric, signal, of_metric, evidence, speed.users_per_day, o)
        best = None if board_rows is None else best_on_board(board_rows, metric)
        choice = signal_choice(
            chosen.signal,
            o.signal is not None,
            board_rows,
            metric,
            _passed_over(best, fits, chosen),
        )
        results.append(replace(chosen, choice=choice, traffic=speed))
    if all(r.fit.status == "too_few_experiments" for r in results):
        first = results[0]
        raise AbevalError(
            f"{where}: {first.fit.k} past experiment{'s' if first.fit.k != 1 else ''} with "
            f"{first.signal} and {first.metric}; the forecast needs {MIN_EXPERIMENTS} or more"
        )
    return ForecastReport(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        history=where,
        candidate=evidence.description,
        alpha=o.alpha,
        mde=o.mde,
        target_assurance=o.assurance,
        forecasts=tuple(results),
        notes=tuple(notes),
        catalog=catalog,
    )
