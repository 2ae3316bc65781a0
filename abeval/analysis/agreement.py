"""``abeval agreement``: which offline signal predicted the online lift, over the
experiments of a store (docs/metrics.md#agreement-across-experiments).

For every experiment (all of the store's, or those named) this module opens
one :class:`~abeval.analysis.session.ExperimentSession` and asks it only for what
the board reads (:func:`experiment_signals`): the online comparisons (of which
the primary metrics are kept), the replayed offline metrics and the off-policy
estimates; no daily series, power, decision, segment or prediction is computed.
The latest recorded evaluations are read for all experiments at once
(:func:`abeval.store.evaluations.latest_evaluations`). Each experiment is read
under its saved configuration (control, primary metrics, window, α, caps...),
the board's ``--primary`` and ``--alpha`` overriding it when given. Each treatment arm ×
primary online metric × offline signal is one :class:`AgreementPair`; a signal
comes from one of three sources:

- ``evaluation``: a recorded ``abeval evaluate --experiment`` run, its relative
  lift from :func:`abeval.analysis.recorded_lift.recorded_lift`;
- ``replay``: a ranking metric replayed from the experiment's own logs, its
  relative lift against control. It is computed from the same clicks as the
  online metrics, so it is not independent evidence (``independent`` is False);
- ``ope``: an off-policy estimate of the treatment's CTR from the control's logs
  (each estimator a signal), its predicted lift. A post-hoc one (no target
  probabilities: the treatment's own frequency of (item, position)) is not
  independent evidence either, and is summarised apart from the predictions.

Where the offline signal predicts the online metric itself (an off-policy CTR
lift against the online CTR lift), each pair also has z = (predicted −
observed) / √(se_pred² + se_obs²), and :func:`with_z_scores` adds their mean and
the share with |z| < 1.96 to the summary (:mod:`abeval.stats.consistency`).

The statistics per (signal, source, online metric) come from
:func:`abeval.stats.agreement.agreement`. Experiments without any offline signal,
and those that could not be analysed, are counted and named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from abeval import __version__
from abeval.analysis.online_metrics import BUILTIN_CATALOG, DEFAULT_PRIMARY, Catalog
from abeval.analysis.ope import OpeOptions, OpeSection
from abeval.analysis.ope_file import read_target_propensities
from abeval.analysis.recorded_lift import recorded_lift
from abeval.analysis.report_model import OfflineResult, OnlineMetricResult, ReportOptions
from abeval.analysis.session import ExperimentSession
from abeval.analysis.team_metrics import read_catalog
from abeval.errors import AbevalError, NotFoundError
from abeval.metrics.registry import offline_lower_is_better
from abeval.stats.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Agreement,
    Point,
    agreement,
)
from abeval.stats.agreement_familywise import familywise_p
from abeval.stats.agreement_noise import expected_precision, noise_ceiling, rho_over_ceiling
from abeval.stats.agreement_predictive import Backtest, backtest, loo_score
from abeval.stats.consistency import lift_difference, z_scores
from abeval.stats.distributions import norm_isf
from abeval.stats.forecast import HistoryRow, fit
from abeval.stats.results import NOT_IN_JSON, JsonResult
from abeval.store.evaluations import RecordedEvaluation, latest_evaluations
from abeval.store.experiments import list_experiments, unknown_experiment_message

if TYPE_CHECKING:
    from abeval.store.engine import Store

SCHEMA_VERSION = "1.0"
SignalSource = Literal["evaluation", "replay", "ope", "history"]
SOURCES: tuple[SignalSource, ...] = ("evaluation", "ope", "history", "replay")

#: How the board ranks signals (docs/metrics.md#agreement-ranking).
RANKING = (
    "independent signals (recorded evaluations, off-policy estimates) before replayed ones; "
    "then by the leave-one-experiment-out predictive score of the forecast model against an "
    "intercept-only model (largest gain in log score first; a signal too short to score "
    "counts as no gain), then the family-wise p-value, Spearman, and experiments covered"
)


@dataclass(frozen=True)
class AgreementOptions:
    """What ``abeval agreement`` lets a user choose. ``experiments``: None for all
    of the store's; ``alpha``: the report's level and the intervals' (1 − α)."""

    experiments: tuple[str, ...] | None = None
    alpha: float = 0.05
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    primary: tuple[str, ...] = DEFAULT_PRIMARY
    #: experiment -> a file of the target's probabilities for its off-policy
    #: estimates (``--target-propensities``); the others use the empirical ones.
    target_propensities: Mapping[str, str] = field(default_factory=dict)
    #: ``--backtest``: forecast each experiment from the earlier ones.
    backtest: bool = False
    #: ``--primary`` was given: it overrides each experiment's recorded primary
    #: metrics (and a history file otherwise keeps all its metrics).
    primary_given: bool = False
    #: ``--alpha`` was given: it overrides each experiment's recorded α.
    alpha_given: bool = False


@dataclass(frozen=True)
class AgreementPair(JsonResult):
    """One experiment × treatment arm × primary online metric × offline signal:
    relative lifts against the control with their 1 − α intervals. The online
    interval is the report's (adjusted over primary metrics × arms);
    ``offline_lift`` is None (with ``offline_status``) when the signal gave none."""

    experiment: str
    arm: str
    online_metric: str
    online_lift: float
    online_ci: tuple[float, float] | None
    online_se: float | None
    signal: str
    source: SignalSource
    offline_lift: float | None
    offline_ci: tuple[float, float] | None
    offline_status: str = "ok"
    #: False for replayed metrics and post-hoc off-policy estimates.
    independent: bool = True
    offline_se: float | None = None
    #: (offline − online) / √(se² + se²) where both are the same quantity, else None.
    z: float | None = None


@dataclass(frozen=True)
class SignalSummary(JsonResult):
    """One signal against one primary online metric over the experiments
    (docs/metrics.md#agreement-across-experiments). ``rank`` is 1 for the signal
    that predicts the online metric best (:data:`RANKING`); ``independent`` is
    False for replayed metrics (same clicks as the online metrics)."""

    rank: int
    signal: str
    source: SignalSource
    online_metric: str
    independent: bool
    offline_lower_is_better: bool
    experiments: int
    pairs: int
    sign_agreement: float | None
    agreeing_pairs: int
    both_significant: int
    both_significant_agreeing: int
    spearman: float | None
    spearman_ci: tuple[float, float] | None
    spearman_p: float | None
    kendall: float | None
    kendall_ci: tuple[float, float] | None
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    slope: float | None
    slope_se: float | None
    slope_ci: tuple[float, float] | None
    intercept: float | None
    tau2: float | None
    precision: float | None
    false_negative_rate: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    status: str
    message: str
    reliability: float | None = None
    ceiling: float | None = None
    ceiling_status: str = "too_few_points"
    rho_over_ceiling: float | None = None
    expected_precision: float | None = None
    familywise_p: float | None = None
    log_score: float | None = None
    baseline_log_score: float | None = None
    predictive_gain: float | None = None
    scored: int = 0
    model_slope: float | None = None
    model_slope_ci: tuple[float, float] | None = None
    model_intercept: float | None = None
    model_tau: float | None = None
    model_experiments: int = 0
    #: Pairs with a z (the signal predicts the online metric itself), their mean z
    #: and the share with |z| < 1.96 (:func:`with_z_scores`).
    z_pairs: int = 0
    z_mean: float | None = None
    z_within: float | None = None


@dataclass(frozen=True)
class ExperimentCoverage(JsonResult):
    """What one experiment contributed: ``status`` ``ok`` (it has offline
    signals), ``no_signals`` (none: no replay, propensities or recorded
    evaluation) or ``skipped`` (it could not be analysed; ``message`` says why)."""

    experiment: str
    control: str | None
    treatments: tuple[str, ...]
    signals: dict[str, int]  # source -> signals found
    status: Literal["ok", "no_signals", "skipped"]
    message: str
    #: The α of its online and replayed intervals: the board's ``--alpha`` when
    #: given, else its recorded α, else the board's (None when skipped).
    alpha: float | None = None


@dataclass(frozen=True)
class AgreementBoard(JsonResult):
    """The whole board: what ``--format json`` prints
    (docs/usage.md#which-offline-signal-predicts-the-online-lift)."""

    schema_version: str
    abeval_version: str
    generated_at: str
    store: str
    alpha: float
    seed: int
    resamples: int
    ranking: str
    experiments: tuple[ExperimentCoverage, ...]
    experiments_with_signals: int
    experiments_without_signals: tuple[str, ...]
    experiments_skipped: tuple[str, ...]
    pairs: tuple[AgreementPair, ...]
    summary: tuple[SignalSummary, ...]
    notes: tuple[str, ...]
    #: ``--backtest``: per signal and online metric, each experiment forecast
    #: from the earlier ones (empty unless asked for).
    backtest: tuple[SignalBacktest, ...] = ()
    #: The store's metrics the board was read with (their labels and directions, for
    #: its presenters; not in the JSON document).
    catalog: Catalog = field(
        default=BUILTIN_CATALOG, repr=False, compare=False, metadata=NOT_IN_JSON
    )


@dataclass(frozen=True)
class SignalBacktest(JsonResult):
    """The backtest of one signal against one online metric: experiments in the
    order of ``ordered_by`` (``start`` of the experiment, or the history's
    ``date``, or ``row`` order when a date is missing)."""

    signal: str
    source: SignalSource
    online_metric: str
    ordered_by: str
    result: Backtest


def agreement_board(
    store: Store, o: AgreementOptions | None = None, catalog: Catalog | None = None
) -> AgreementBoard:
    """Read every experiment's signals once, collect the pairs, summarise per signal
    (``catalog``: the store's metrics when read already)."""
    o = o or AgreementOptions()
    if catalog is None:
        with store.connect() as conn:
            catalog = read_catalog(conn)
    names = _experiments(store, o.experiments)
    _experiments(store, list(o.target_propensities))  # every file names a known experiment
    for file in o.target_propensities.values():
        read_target_propensities(file)  # a file the user gave is an error, not a skipped report
    evaluations = latest_evaluations(store, names)
    pairs: list[AgreementPair] = []
    coverage: list[ExperimentCoverage] = []
    for name in names:
        try:
            read = experiment_signals(store, name, experiment_options(o, name), catalog)
        except AbevalError as exc:
            coverage.append(ExperimentCoverage(name, None, (), {}, "skipped", exc.message))
            continue
        found = experiment_pairs(read, evaluations.get(name))
        pairs += found
        coverage.append(_coverage(read, found))
    starts = {e.experiment: e.first_ts or "" for e in list_experiments(store)}
    order = sorted(names, key=lambda n: (starts.get(n, ""), n))
    levels = {c.experiment: c.alpha for c in coverage if c.alpha is not None}
    summary = with_z_scores(summarise(pairs, o, catalog, levels), pairs)
    return AgreementBoard(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        store=store.display,
        alpha=o.alpha,
        seed=o.seed,
        resamples=o.resamples,
        ranking=RANKING,
        experiments=tuple(coverage),
        experiments_with_signals=sum(1 for c in coverage if c.status == "ok"),
        experiments_without_signals=tuple(
            c.experiment for c in coverage if c.status == "no_signals"
        ),
        experiments_skipped=tuple(c.experiment for c in coverage if c.status == "skipped"),
        pairs=tuple(pairs),
        summary=summary,
        notes=notes(o),
        backtest=backtests(pairs, order, "start", o, catalog, levels) if o.backtest else (),
        catalog=catalog,
    )


@dataclass(frozen=True)
class ExperimentSignals:
    """What the board reads of one experiment: its control and other arms, the
    online comparisons of its primary metrics, the replayed offline metrics and
    the off-policy estimates (or why they were not run)."""

    experiment: str
    control: str
    treatments: tuple[str, ...]
    primary: tuple[OnlineMetricResult, ...]
    offline: tuple[OfflineResult, ...]
    ope: OpeSection
    #: The α it was read at (its saved configuration's, unless the board's was given).
    alpha: float


def experiment_signals(
    store: Store, name: str, options: ReportOptions, catalog: Catalog
) -> ExperimentSignals:
    """The parts of ``name`` the board reads, from one session (no daily series,
    power, decision or prediction) with the store's ``catalog``; an
    :class:`AbevalError` when it cannot be read."""
    with ExperimentSession(store, name, options, catalog) as session:
        primary = tuple(m for m in session.online_comparisons() if m.role == "primary")
        offline = session.offline[0]
        others = tuple(session.observed.arms[1:])  # control first
        o = session.options  # under the saved configuration
        return ExperimentSignals(
            name, session.control, others, primary, offline, session.ope, o.alpha
        )


def backtests(
    pairs: Sequence[AgreementPair],
    order: Sequence[str],
    ordered_by: str,
    o: AgreementOptions,
    catalog: Catalog,
    levels: Mapping[str, float] | None = None,
) -> tuple[SignalBacktest, ...]:
    """The backtest of every (signal, source, online metric) of ``pairs``, in the
    summary's order of online metrics, experiments in ``order`` (``levels``: as
    :func:`history_rows` takes them)."""
    out = []
    for (signal, source, metric, independent), points in _oriented(pairs, catalog).items():
        if not independent and source != "replay":  # post-hoc estimates forecast nothing
            continue
        rows = history_rows(points, o.alpha, own_levels(source, levels))
        result = backtest(rows, list(order), o.alpha)
        out.append(SignalBacktest(signal, source, metric, ordered_by, result))
    rank = {m: i for i, m in enumerate(o.primary)}
    out.sort(key=lambda b: (rank.get(b.online_metric, len(rank)), b.online_metric,
                            SOURCES.index(b.source), b.signal))  # fmt: skip
    return tuple(out)


#: A board row's key: signal, source, online metric, independent evidence or not.
RowKey = tuple[str, SignalSource, str, bool]


def _oriented(pairs: Sequence[AgreementPair], catalog: Catalog) -> dict[RowKey, list[Point]]:
    """The pairs grouped per (signal, source, online metric, independence), as
    points oriented so that larger is better (the online metric's direction from
    ``catalog``; pairs without an offline lift left out)."""
    groups: dict[RowKey, list[AgreementPair]] = {}
    for p in pairs:
        groups.setdefault((p.signal, p.source, p.online_metric, p.independent), []).append(p)
    out = {}
    for (signal, source, metric, independent), group in groups.items():
        flip_offline = signal_lower_is_better(signal, source)
        flip_online = catalog.lower_is_better(metric)
        points = [_point(p, flip_offline, flip_online) for p in group]
        out[(signal, source, metric, independent)] = [p for p in points if p is not None]
    return out


def experiment_options(o: AgreementOptions, name: str) -> ReportOptions:
    """The options one experiment is read under: its saved configuration, with the
    board's primary metrics and α as flags when they were given, its
    target-probabilities file, if any, and no daily series."""
    flags = frozenset(n for n, given in (("primary", o.primary_given), ("alpha", o.alpha_given))
                      if given)  # fmt: skip
    # off-policy: control's logs → each treatment only, the direction the board shows
    ope = OpeOptions(target_propensities=o.target_propensities.get(name), reverse=False)
    return ReportOptions(alpha=o.alpha, daily=False, primary=o.primary, flags=flags, ope=ope)


def _experiments(store: Store, asked: Sequence[str] | None) -> list[str]:
    """The experiments to analyse; an unknown name is an error with a did-you-mean."""
    known = [e.experiment for e in list_experiments(store)]
    if asked is None:
        return known
    for name in asked:
        if name not in known:
            raise NotFoundError(unknown_experiment_message(name, known))
    return list(dict.fromkeys(asked))


def _coverage(read: ExperimentSignals, pairs: Sequence[AgreementPair]) -> ExperimentCoverage:
    signals: dict[str, int] = {
        source: len({p.signal for p in pairs if p.source == source})
        for source in SOURCES
        if any(p.source == source for p in pairs)
    }
    name, control, treatments, level = read.experiment, read.control, read.treatments, read.alpha
    if signals:
        return ExperimentCoverage(name, control, treatments, signals, "ok", "", level)
    why = "no replayed metric, no impression with a propensity, no recorded evaluation"
    return ExperimentCoverage(name, control, treatments, {}, "no_signals", why, level)


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class _Lift:
    value: float | None
    ci: tuple[float, float] | None
    status: str
    se: float | None = None
    independent: bool = True
    #: The signal predicts the online metric of this name itself (z is defined).
    predicts: str | None = None


def experiment_pairs(
    read: ExperimentSignals, evaluation: RecordedEvaluation | None
) -> list[AgreementPair]:
    """Every (treatment arm, primary online metric, signal) of one experiment."""
    pairs = []
    for m in read.primary:
        rel = m.comparison.relative
        if rel.effect is None:
            continue
        for signal, source, lift in _signals(read, evaluation, m.arm):
            z = None
            if lift.predicts == m.metric:
                z = lift_difference(lift.value, lift.se, rel.effect, rel.se, 0.05).z
            pairs.append(
                AgreementPair(
                    experiment=read.experiment,
                    arm=m.arm,
                    online_metric=m.metric,
                    online_lift=rel.effect,
                    online_ci=rel.interval,
                    online_se=rel.se,
                    signal=signal,
                    source=source,
                    offline_lift=lift.value,
                    offline_ci=lift.ci,
                    offline_status=lift.status,
                    independent=lift.independent and source != "replay",
                    offline_se=lift.se,
                    z=z,
                )
            )
    return pairs


def _signals(
    read: ExperimentSignals, evaluation: RecordedEvaluation | None, arm: str
) -> Iterable[tuple[str, SignalSource, _Lift]]:
    """(signal, source, offline lift) for one treatment arm. Offline intervals are
    each signal's own 1 − α interval, not adjusted over the other signals."""
    if evaluation is not None:
        for metric in dict.fromkeys(r.metric for r in evaluation.metrics if r.arm == arm):
            found = recorded_lift(evaluation, arm, metric)
            if found is not None:
                yield metric, "evaluation", _Lift(found.value, found.ci, found.status)
    ope = read.ope
    if ope.status == "ok":
        for d in ope.directions:
            if d.source == read.control and d.target == arm:
                for e in d.estimates:
                    p = e.predicted_lift
                    if p.status in UNSUPPORTED:  # the logs cannot form it: not a signal here
                        continue
                    own = d.evidence == "prediction"
                    yield e.estimator, "ope", _Lift(p.value, p.ci, p.status, p.se, own, "ctr")
    for r in read.offline:
        if r.arm == arm:
            rel = r.comparison.relative
            status = "ok" if rel.effect is not None else r.comparison.status
            yield r.metric, "replay", _Lift(rel.effect, rel.ci, status)


#: Estimate statuses that mean the logs cannot support the estimator at all.
UNSUPPORTED = frozenset({"no_given_above", "incomplete_candidates"})


# --------------------------------------------------------------------------- summary


def signal_lower_is_better(signal: str, source: SignalSource) -> bool:
    """A recorded or replayed metric where a smaller value is better (rmse, mae);
    an off-policy estimate is a CTR lift, larger is better."""
    return source != "ope" and offline_lower_is_better(signal)


def _point(p: AgreementPair, flip_offline: bool, flip_online: bool) -> Point | None:
    """The pair as the statistics read it, oriented so that larger is better."""
    if p.offline_lift is None:
        return None

    def orient(value: float, ci: tuple[float, float] | None, flip: bool) -> tuple:
        if not flip:
            return value, ci
        return -value, None if ci is None else (-ci[1], -ci[0])

    offline, offline_ci = orient(p.offline_lift, p.offline_ci, flip_offline)
    online, online_ci = orient(p.online_lift, p.online_ci, flip_online)
    return Point(p.experiment, offline, online, offline_ci, online_ci, p.online_se, p.arm)


def summarise(
    pairs: Sequence[AgreementPair],
    o: AgreementOptions,
    catalog: Catalog,
    levels: Mapping[str, float] | None = None,
) -> tuple[SignalSummary, ...]:
    """One ranked :class:`SignalSummary` per (signal, source, online metric), each
    online metric in its direction in ``catalog``; ranks count within each online
    metric, in the order of ``o.primary`` (``levels``: as :func:`history_rows` takes
    them)."""
    rows = []
    oriented = _oriented(pairs, catalog)
    for (signal, source, metric, independent), kept in oriented.items():
        flip_offline = signal_lower_is_better(signal, source)
        a = agreement(kept, o.alpha, o.resamples, o.seed)
        row = replace(_summary(signal, source, metric, flip_offline, a), independent=independent)
        row = _with_noise(row, kept, o)
        history = history_rows(kept, o.alpha, own_levels(source, levels))
        rows.append(_with_score(row, history, o.alpha))
    rows = _with_familywise(rows, oriented, o)
    order = {m: i for i, m in enumerate(o.primary)}
    rows.sort(key=lambda r: (order.get(r.online_metric, len(order)), r.online_metric, _key(r)))
    ranked, rank, previous = [], 0, None
    for r in rows:
        rank = rank + 1 if r.online_metric == previous else 1
        previous = r.online_metric
        ranked.append(replace(r, rank=rank))
    return tuple(ranked)


def _with_noise(row: SignalSummary, points: Sequence[Point], o: AgreementOptions) -> SignalSummary:
    """The row with its online lifts' reliability, noise ceiling and expected precision."""
    online = [p.online for p in points]
    se = [p.online_se for p in points]
    c = noise_ceiling(online, se, seed=o.seed)
    says = [p.offline_ci is not None and p.offline_ci[0] > 0 for p in points]
    e = expected_precision(online, se, says)
    return replace(
        row,
        reliability=c.reliability,
        ceiling=c.ceiling,
        ceiling_status=c.status,
        rho_over_ceiling=rho_over_ceiling(row.spearman, c),
        expected_precision=e.expected_precision,
    )


def own_levels(
    source: SignalSource, levels: Mapping[str, float] | None
) -> Mapping[str, float] | None:
    """The experiments' levels where ``source``'s intervals are at them: replayed
    metrics and off-policy estimates; a recorded evaluation's interval is at the
    level it was evaluated at, not the experiment's (None: the board's α)."""
    return None if source == "evaluation" else levels


def history_rows(
    points: Sequence[Point], alpha: float, levels: Mapping[str, float] | None = None
) -> list[HistoryRow]:
    """The forecast model's rows of a signal's points: those with an online
    standard error above 0; the offline standard error is read off the offline
    1 − α interval as its width / (2 z), 0 without an interval, with α the
    experiment's own in ``levels`` (its saved configuration's), else ``alpha``."""
    levels = levels or {}
    rows = []
    for p in points:
        if p.online_se is None or not p.online_se > 0:
            continue
        z = norm_isf(levels.get(p.cluster, alpha) / 2)
        ci = p.offline_ci
        se = 0.0 if ci is None else max(ci[1] - ci[0], 0.0) / (2 * z)
        rows.append(HistoryRow(p.offline, se, p.online, p.online_se, p.cluster))
    return rows


def _with_score(row: SignalSummary, history: Sequence[HistoryRow], alpha: float) -> SignalSummary:
    """The row with the forecast model's fit on every row, and the
    leave-one-experiment-out log scores (forecast model and intercept-only) and
    their difference."""
    score = loo_score(history)
    model = fit(history, alpha)
    return replace(
        row,
        log_score=score.log_score,
        baseline_log_score=score.baseline_log_score,
        predictive_gain=score.gain,
        scored=score.scored,
        model_slope=model.slope,
        model_slope_ci=model.slope_interval,
        model_intercept=model.intercept,
        model_tau=model.tau,
        model_experiments=len({r.experiment for r in history}),
    )


def _with_familywise(
    rows: Sequence[SignalSummary],
    points: Mapping[RowKey, Sequence[Point]],
    o: AgreementOptions,
) -> list[SignalSummary]:
    """Each row with its family-wise p-value: the family is every signal of the
    same online metric and the same independence (replayed metrics, close to
    circular, would otherwise set the bar for the others)."""
    families: dict[tuple[str, bool], list[int]] = {}
    for i, r in enumerate(rows):
        families.setdefault((r.online_metric, r.independent), []).append(i)
    out = list(rows)
    for members in families.values():
        keys = [
            (rows[i].signal, rows[i].source, rows[i].online_metric, rows[i].independent)
            for i in members
        ]
        found = familywise_p([points[k] for k in keys], o.resamples, o.seed)
        for i, p in zip(members, found.p_values, strict=True):
            out[i] = replace(out[i], familywise_p=p)
    return out


def with_z_scores(
    summary: Sequence[SignalSummary], pairs: Sequence[AgreementPair]
) -> tuple[SignalSummary, ...]:
    """Each summary row with the mean z and the share |z| < 1.96 of its pairs
    (:mod:`abeval.stats.consistency`); rows whose pairs have no z are unchanged."""
    out = []
    for r in summary:
        zs = [
            p.z
            for p in pairs
            if (p.signal, p.source, p.online_metric, p.independent)
            == (r.signal, r.source, r.online_metric, r.independent)
        ]
        found = z_scores(zs)
        if found.pairs:
            r = replace(r, z_pairs=found.pairs, z_mean=found.z_mean, z_within=found.z_within)
        out.append(r)
    return tuple(out)


def _key(r: SignalSummary) -> tuple:
    """Sort key of :data:`RANKING` (ascending sorts the best first). The numbers are
    compared to 9 decimals: two signals equal but for the last bits of a sum (which
    DuckDB's threads add in any order) tie, and the tie goes by name, run after run."""
    return (
        not r.independent,
        -round(r.predictive_gain if r.predictive_gain is not None else 0.0, 9),
        round(r.familywise_p if r.familywise_p is not None else 1.0, 9),
        -round(r.spearman if r.spearman is not None else 0.0, 9),
        -r.experiments,
        SOURCES.index(r.source),
        r.signal,
    )


def _summary(
    signal: str, source: SignalSource, metric: str, flipped: bool, a: Agreement
) -> SignalSummary:
    c, d = a.calibration, a.decisions
    return SignalSummary(
        rank=0,
        signal=signal,
        source=source,
        online_metric=metric,
        independent=source != "replay",
        offline_lower_is_better=flipped,
        experiments=a.experiments,
        pairs=a.points,
        sign_agreement=a.sign.share,
        agreeing_pairs=a.sign.agree,
        both_significant=a.sign.both_significant,
        both_significant_agreeing=a.sign.both_significant_agree,
        spearman=a.spearman.estimate,
        spearman_ci=a.spearman.ci,
        spearman_p=a.spearman.p_value,
        kendall=a.kendall.estimate,
        kendall_ci=a.kendall.ci,
        pearson=a.pearson.estimate,
        pearson_ci=a.pearson.ci,
        slope=c.slope,
        slope_se=c.se,
        slope_ci=c.ci,
        intercept=c.intercept,
        tau2=c.tau2,
        precision=d.precision,
        false_negative_rate=d.false_negative_rate,
        true_positives=d.true_positives,
        false_positives=d.false_positives,
        false_negatives=d.false_negatives,
        true_negatives=d.true_negatives,
        status=a.spearman.status,
        message=a.spearman.message,
    )


def notes(o: AgreementOptions) -> tuple[str, ...]:
    level = f"{1 - o.alpha:.0%}"
    return (
        "Replayed metrics are computed from the same clicks (and purchases) as the online "
        "metrics: a replayed ranking metric that tracks CTR is close to circular, not evidence "
        "that it predicts. Off-policy estimates and recorded evaluations do not read the "
        "treatment's clicks.",
        f"Lifts are relative to the control; intervals are {level}. The online interval is the "
        "report's (adjusted over primary metrics × treatment arms); each offline interval is "
        "its signal's own.",
        f"Correlations: percentile bootstrap over experiments, {o.resamples:,} resamples, seed "
        f"{o.seed}; at least 3 experiments. With few experiments the bootstrap is too narrow "
        "(experiments in perfect order give [1, 1]); the permutation p-value of Spearman's "
        "correlation (exact up to 8 pairs) says how often unrelated lifts would rank as well.",
        "Calibration slope: online lift on offline lift, weighted by 1 / (se² + τ²) with τ² "
        "the between-experiment variance by the method of moments, its interval by "
        "Hartung–Knapp–Sidik–Jonkman with t(k − 2); 1 means the offline lift carries over as "
        "it is. The offline lift's own noise is not modelled there, which pulls it towards 0; "
        "the forecast model's slope (model slope) corrects for it by regression calibration.",
        "Noise: reliability R = max(0, 1 − mean(se²) / var(online lift)) is the share of the "
        "online lifts' spread that is real. The ceiling is the Spearman correlation a perfect "
        "predictor would reach on average against lifts this noisy (simulated, seed "
        f"{o.seed}); read Spearman as Spearman / ceiling. Below a ceiling of 0.2 the ratio is "
        "not given.",
        "Expected precision: of the points where the offline interval lies above 0, the "
        "expected share whose true online lift is above 0, each P(lift > 0 | observed) under "
        "normal–normal shrinkage towards the mean with the between-experiment variance. Raw "
        "precision counts only significant online lifts and is low even for a perfect "
        "predictor when the tests are small.",
        "Family-wise p: how often the best of all the signals of this online metric (replayed "
        "ones a family of their own) would rank the lifts at least this well if none were "
        "related, permuting whole experiments (arms sharing a control move together); "
        f"{o.resamples:,} permutations, or all of them up to 10,000.",
        "LOO gain: each experiment forecast by the forecast model fitted on the others, the "
        "mean log density of its observed online lift minus that of an intercept-only model "
        "(no offline signal); above 0 the signal improved the forecasts.",
        "Decision quality: offline says better when its interval lies above 0; online is "
        "better when its interval lies above 0. Precision = TP / (TP + FP); false-negative "
        "rate = FN / (TP + FN).",
        "A metric where lower is better (rmse, mae) is negated before comparing, so a good "
        "predictor always shows positive correlations.",
        f"Ranking: {RANKING}.",
        "Predicted against observed: where the signal predicts the online metric itself (an "
        "off-policy CTR lift), z = (predicted − observed) / √(se_pred² + se_obs²) per "
        "experiment; a signal whose stated errors are right has mean z near 0 and |z| < 1.96 "
        "in about 95% of experiments. The shared baseline makes the sum of variances an "
        "upper bound, so the share is if anything too high.",
    )
