"""The agreement board's summary: the pairs of each (signal, source, online metric)
oriented so that larger is better, their agreement statistics
(:func:`abeval.stats.agreement.agreement`), noise ceiling, forecast-model fit and
leave-one-out score, family-wise p-value and z scores, ranked by
:data:`~abeval.analysis.agreement.RANKING` (:func:`summarise`); and the
backtests (:func:`backtests`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from abeval.analysis.agreement import (
    SOURCES,
    AgreementOptions,
    AgreementPair,
    SignalBacktest,
    SignalSource,
    SignalSummary,
)
from abeval.analysis.online_metrics import Catalog
from abeval.metrics.registry import offline_lower_is_better
from abeval.stats.agreement import Agreement, Point, agreement
from abeval.stats.agreement_familywise import familywise_p
from abeval.stats.agreement_noise import expected_precision, noise_ceiling, rho_over_ceiling
from abeval.stats.agreement_predictive import backtest, loo_score
from abeval.stats.consistency import z_scores
from abeval.stats.forecast import HistoryRow, fit

#: A board row's key: signal, source, online metric, independent evidence or not.
RowKey = tuple[str, SignalSource, str, bool]


def summarise(
    pairs: Sequence[AgreementPair], o: AgreementOptions, catalog: Catalog
) -> tuple[SignalSummary, ...]:
    """One ranked :class:`SignalSummary` per (signal, source, online metric), each
    online metric in its direction in ``catalog``; ranks count within each online
    metric, in the order of ``o.primary``."""
    rows = []
    oriented = _oriented(pairs, catalog)
    for (signal, source, metric, independent), kept in oriented.items():
        flip_offline = signal_lower_is_better(signal, source)
        a = agreement(kept, o.alpha, o.resamples, o.seed)
        row = replace(_summary(signal, source, metric, flip_offline, a), independent=independent)
        row = _with_noise(row, kept, o)
        history = history_rows(kept)
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


def backtests(
    pairs: Sequence[AgreementPair],
    order: Sequence[str],
    ordered_by: str,
    o: AgreementOptions,
    catalog: Catalog,
) -> tuple[SignalBacktest, ...]:
    """The backtest of every (signal, source, online metric) of ``pairs``, in the
    summary's order of online metrics, experiments in ``order``."""
    out = []
    for (signal, source, metric, independent), points in _oriented(pairs, catalog).items():
        if not independent and source != "replay":  # post-hoc estimates forecast nothing
            continue
        rows = history_rows(points)
        result = backtest(rows, list(order), o.alpha)
        out.append(SignalBacktest(signal, source, metric, ordered_by, result))
    rank = {m: i for i, m in enumerate(o.primary)}
    out.sort(key=lambda b: (rank.get(b.online_metric, len(rank)), b.online_metric,
                            SOURCES.index(b.source), b.signal))  # fmt: skip
    return tuple(out)


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
    return Point(
        p.experiment, offline, online, offline_ci, online_ci, p.online_se, p.arm, p.offline_se
    )


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


def history_rows(points: Sequence[Point]) -> list[HistoryRow]:
    """The forecast model's rows of a signal's points: those with an online
    standard error above 0, with the pair's offline standard error
    (:attr:`~abeval.analysis.agreement.AgreementPair.offline_se`; 0 without one)."""
    rows = []
    for p in points:
        if p.online_se is None or not p.online_se > 0:
            continue
        se = p.offline_se if p.offline_se is not None else 0.0
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
