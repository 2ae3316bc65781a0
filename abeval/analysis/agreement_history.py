"""``abeval agreement --history FILE``: the agreement board over a history file
(the one ``abeval forecast --history`` reads, :mod:`abeval.analysis.forecast_history`)
instead of a store, for teams whose past results live in another platform.

Each row becomes one :class:`~abeval.analysis.agreement.AgreementPair` of
source ``history``: both intervals are the lift ± z·se. Experiments are
ordered for the backtest by their ``date`` (the earliest row's), or by the
order they first appear in the file when any row has no date. ``--primary``
keeps those online metrics only; by default every metric of the file. A file
belongs to no store: its online metrics take their directions from the built-in
catalog (a name not built in counts as higher-is-better).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from abeval import __version__
from abeval.analysis.agreement import (
    RANKING,
    SCHEMA_VERSION,
    AgreementBoard,
    AgreementOptions,
    AgreementPair,
    ExperimentCoverage,
)
from abeval.analysis.agreement_board import notes
from abeval.analysis.agreement_headline import headlines
from abeval.analysis.agreement_summary import backtests, summarise
from abeval.analysis.forecast_history import HistoryEntry, read_history
from abeval.analysis.online_metrics import BUILTIN_CATALOG
from abeval.errors import InputError
from abeval.stats.distributions import norm_isf


def _pair(e: HistoryEntry, z: float) -> AgreementPair:
    return AgreementPair(
        experiment=e.experiment,
        arm=e.arm,
        online_metric=e.metric,
        online_lift=e.online_lift,
        online_ci=(e.online_lift - z * e.online_se, e.online_lift + z * e.online_se),
        online_se=e.online_se,
        signal=e.signal,
        source="history",
        offline_lift=e.offline_lift,
        offline_ci=(e.offline_lift - z * e.offline_se, e.offline_lift + z * e.offline_se),
        offline_se=e.offline_se,
    )


def _order(entries: list[HistoryEntry]) -> tuple[list[str], str]:
    """Experiments in time order (earliest ``date`` first) and what ordered them."""
    first_row: dict[str, int] = {}
    dates: dict[str, str] = {}
    for e in entries:
        first_row.setdefault(e.experiment, e.row)
        if e.date:
            dates[e.experiment] = min(dates.get(e.experiment, e.date), e.date)
    if all(e.date for e in entries):
        return sorted(first_row, key=lambda n: (dates[n], first_row[n])), "date"
    return sorted(first_row, key=first_row.__getitem__), "row"


def history_board(path: str | Path, o: AgreementOptions) -> AgreementBoard:
    """The board of the history file ``path`` (module docstring)."""
    entries = read_history(path)
    metrics = list(dict.fromkeys(e.metric for e in entries))
    if o.primary_given:
        kept = [e for e in entries if e.metric in o.primary]
        if not kept:
            raise InputError(
                f"{path}: no row of the metric {', '.join(o.primary)}; the file has "
                f"{', '.join(metrics)} (choose with {{primary}})",
                parameters=("primary",),
            )
        entries = kept
    else:
        o = replace(o, primary=tuple(metrics))
    z = norm_isf(o.alpha / 2)
    pairs = [_pair(e, z) for e in entries]
    order, ordered_by = _order(entries)
    coverage = []
    for name in order:
        arms = tuple(dict.fromkeys(e.arm for e in entries if e.experiment == name))
        signals = len({e.signal for e in entries if e.experiment == name})
        coverage.append(ExperimentCoverage(name, None, arms, {"history": signals}, "ok", ""))
    summary = summarise(pairs, o, BUILTIN_CATALOG)
    return AgreementBoard(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        store=f"history file {path}",
        alpha=o.alpha,
        seed=o.seed,
        resamples=o.resamples,
        ranking=RANKING,
        headlines=headlines(summary, o.alpha),
        experiments=tuple(coverage),
        experiments_with_signals=len(coverage),
        experiments_without_signals=(),
        experiments_skipped=(),
        pairs=tuple(pairs),
        summary=summary,
        notes=notes(o),
        backtest=backtests(pairs, order, ordered_by, o, BUILTIN_CATALOG) if o.backtest else (),
        catalog=BUILTIN_CATALOG,
    )
