"""The agreement board's answer per online metric (docs/metrics.md#the-boards-answer):
which signal predicts it best by the board's ranking (:func:`best_signal`, also
what ``abeval forecast`` reads when no ``--signal`` is given), how well, and
which signals cannot be told from noise (:func:`headline`). Codes and numbers
only: the presenters (:mod:`abeval.report.agreement_words`) write the sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from abeval.analysis.agreement import (
    BestSignal,
    BestStatus,
    BoardHeadline,
    Criterion,
    NoiseSignal,
    SignalSummary,
)
from abeval.stats.agreement import MIN_EXPERIMENTS

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard

#: Experiments for leaving one out in the predictive score (one more than a fit).
MIN_SCORED = MIN_EXPERIMENTS + 1


def _criterion(row: SignalSummary) -> Criterion:
    if row.predictive_gain is not None:
        return "predictive_gain"
    if row.familywise_p is not None:
        return "familywise_p"
    return "spearman"


def best_from_rows(rows: Sequence[SignalSummary], metric: str) -> BestSignal:
    """:func:`best_signal` over summary rows (those of other metrics are ignored)."""
    ranked = sorted((r for r in rows if r.online_metric == metric), key=lambda r: r.rank)
    if not ranked:
        return BestSignal(metric, "no_signals", None, None, None, 0, MIN_EXPERIMENTS)
    with_rho = [r for r in ranked if r.spearman is not None]
    if not with_rho:
        most = max(r.experiments for r in ranked)
        top = ranked[0]
        status: BestStatus = "too_few_experiments"
        needed = max(MIN_EXPERIMENTS - most, 0)
    else:
        top = with_rho[0]
        status = "ok" if top.independent else "not_independent"
        needed = max(MIN_SCORED - top.experiments, 0) if top.predictive_gain is None else 0
    return BestSignal(
        online_metric=metric,
        status=status,
        signal=top.signal,
        source=top.source,
        criterion=_criterion(top),
        experiments=top.experiments,
        more_experiments_needed=needed,
        row=top,
    )


def best_signal(board: AgreementBoard, metric: str) -> BestSignal:
    """The board's best predictor of ``metric``: its best-ranked signal with a
    Spearman correlation (:data:`~abeval.analysis.agreement.RANKING`: independent
    signals first, then by leave-one-experiment-out predictive gain, family-wise
    p, Spearman), with the criterion that put it first. ``status`` says when it is
    no answer: too few experiments, or only signals replayed from the same clicks
    or estimated post hoc (``not_independent``). ``abeval forecast`` reads it
    when no ``--signal`` is given."""
    return best_from_rows(board.summary, metric)


def noise_signals(
    rows: Sequence[SignalSummary], metric: str, alpha: float
) -> tuple[NoiseSignal, ...]:
    """The signals of ``metric`` whose family-wise p is α or more (or undefined),
    in rank order."""
    return tuple(
        NoiseSignal(r.signal, r.source, r.independent, r.familywise_p)
        for r in sorted(rows, key=lambda r: r.rank)
        if r.online_metric == metric and (r.familywise_p is None or r.familywise_p >= alpha)
    )


def headline(rows: Sequence[SignalSummary], metric: str, alpha: float) -> BoardHeadline:
    """The board's answer for ``metric`` (:class:`BoardHeadline`)."""
    best = best_from_rows(rows, metric)
    top = best.row
    return BoardHeadline(
        online_metric=metric,
        status=best.status,
        best_signal=best.signal,
        best_source=best.source,
        criterion=best.criterion,
        predictive_gain=None if top is None else top.predictive_gain,
        spearman=None if top is None else top.spearman,
        spearman_ci=None if top is None else top.spearman_ci,
        ceiling=None if top is None else top.ceiling,
        ceiling_status=None if top is None else top.ceiling_status,
        rho_over_ceiling=None if top is None else top.rho_over_ceiling,
        slope=None if top is None else top.slope,
        slope_ci=None if top is None else top.slope_ci,
        familywise_p=None if top is None else top.familywise_p,
        experiments=best.experiments,
        more_experiments_needed=best.more_experiments_needed,
        alpha=alpha,
        noise_signals=noise_signals(rows, metric, alpha),
        signals=sum(1 for r in rows if r.online_metric == metric),
    )


def headlines(rows: Sequence[SignalSummary], alpha: float) -> tuple[BoardHeadline, ...]:
    """One :class:`BoardHeadline` per online metric of ``rows``, in their order."""
    return tuple(headline(rows, m, alpha) for m in dict.fromkeys(r.online_metric for r in rows))
