"""The forecast's history from the store: the agreement board's pairs (every
experiment × treatment arm × primary metric × offline signal), as history
entries, with the users of each test and each experiment's users per day. Post-hoc
off-policy estimates (the target arm's own frequencies, no target file) are
left out: like the board, the forecast learns only from predictions.

Only the board's public functions are used
(:func:`abeval.analysis.agreement_board.agreement_board`); the board's ranking says
which signal predicts best.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from abeval.analysis.forecast_history import HistoryEntry

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard, SignalSummary
    from abeval.analysis.forecast import ForecastOptions
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database
    from abeval.store.experiments import ExperimentSummary


def signal_key(signal: str, source: str) -> str:
    """The name a store signal goes by in the forecast: a replayed metric is
    ``ndcg@10 (replay)``, apart from a recorded evaluation's ``ndcg@10``."""
    return f"{signal} (replay)" if source == "replay" else signal


@dataclass(frozen=True)
class StoreHistory:
    """The entries, the board's signals best first per online metric (``ranking``
    the names, ``rows`` the board's rows), and per online metric the users per day
    of each experiment the board pairs with it (``rates``)."""

    entries: tuple[HistoryEntry, ...]
    ranking: dict[str, tuple[str, ...]]
    rates: dict[str, tuple[tuple[str, float], ...]]
    skipped: tuple[str, ...]
    #: The store's metrics the board was read with.
    catalog: Catalog
    rows: tuple[SignalSummary, ...] = ()


def _days(first: str | None, last: str | None) -> float | None:
    if first is None or last is None:
        return None
    span = datetime.fromisoformat(last) - datetime.fromisoformat(first)
    return max(span.total_seconds() / 86400.0, 1.0)


def store_history(
    store: Database, o: ForecastOptions, board: AgreementBoard | None = None
) -> StoreHistory:
    """Every pair of the store's board with an offline interval, as an entry; each
    experiment read under its saved configuration, ``o``'s primary metrics and α
    overriding it where given. ``board``: the store's board already built, read
    instead of building it again (then only ``o.primary`` is read from it)."""
    from abeval.analysis.agreement import AgreementOptions
    from abeval.analysis.agreement_board import agreement_board

    # a board built for other options may carry more metrics than were asked for:
    # from one given, only ``o``'s primary metrics are read
    wanted = set(o.primary) if o.primary_given or board is not None else None
    if board is None:
        options = AgreementOptions(
            alpha=o.alpha,
            primary=o.primary,
            primary_given=o.primary_given,
            alpha_given=o.alpha_given,
        )
        board = agreement_board(store, options)
    summaries, starts = experiment_listing(store)
    controls = {c.experiment: c.control for c in board.experiments}
    entries: list[HistoryEntry] = []
    skipped: list[str] = []
    for p in board.pairs:
        if wanted is not None and p.online_metric not in wanted:
            continue
        if p.source == "ope" and not p.independent:
            continue  # post hoc: the target arm's own impressions, no forecast evidence
        if p.offline_lift is None or p.offline_se is None or p.online_se is None:
            skipped.append(f"{p.experiment}/{p.arm}/{signal_key(p.signal, p.source)}")
            continue
        summary = summaries.get(p.experiment)
        users = None
        date = ""
        if summary is not None:
            arm_users = {a.arm: a.users for a in summary.arms}
            control = controls.get(p.experiment)
            if control in arm_users and p.arm in arm_users:
                users = float(arm_users[control] + arm_users[p.arm])
            date = summary.first_ts or ""
        entries.append(
            HistoryEntry(
                row=0,
                experiment=p.experiment,
                signal=signal_key(p.signal, p.source),
                metric=p.online_metric,
                arm=p.arm,
                date=date,
                offline_lift=p.offline_lift,
                offline_se=p.offline_se,
                online_lift=p.online_lift,
                online_se=p.online_se,
                users=users,
            )
        )
    rows = tuple(s for s in board.summary if wanted is None or s.online_metric in wanted)
    ranking: dict[str, list[str]] = {}
    for s in rows:
        ranking.setdefault(s.online_metric, []).append(signal_key(s.signal, s.source))
    measuring: dict[str, dict[str, None]] = {}
    for p in board.pairs:
        measuring.setdefault(p.online_metric, {})[p.experiment] = None
    return StoreHistory(
        entries=tuple(entries),
        ranking={m: tuple(dict.fromkeys(v)) for m, v in ranking.items()},
        rates={m: _rates((summaries[e] for e in names if e in summaries), starts)
               for m, names in measuring.items()},
        catalog=board.catalog,
        skipped=tuple(dict.fromkeys(skipped)),
        rows=rows,
    )  # fmt: skip


def experiment_listing(
    store: Database,
) -> tuple[dict[str, ExperimentSummary], dict[str, str]]:
    """Each ingested experiment's summary (users and events per arm,
    :func:`~abeval.store.experiments.list_experiments`) and first exposure
    (:func:`~abeval.store.experiments.exposure_starts`): read from the kept
    summaries while no row of ``experiments`` changed (an ingest rewrites the rows
    it adds events to), else counted over the events and kept."""
    from abeval.analysis.kept import computed_once
    from abeval.store.experiments import experiment_rows, exposure_starts, list_experiments

    def counted() -> tuple[dict[str, ExperimentSummary], dict[str, str]]:
        return {e.experiment: e for e in list_experiments(store)}, exposure_starts(store)

    found: tuple[dict[str, ExperimentSummary], dict[str, str]] = computed_once(
        store, "listing", experiment_rows(store), None, counted, tuple
    )
    return found


def _rates(
    experiments: Iterable[ExperimentSummary], starts: Mapping[str, str]
) -> tuple[tuple[str, float], ...]:
    """Each experiment's name and users (all arms) per day of its analysis window:
    from its first exposure (``starts``; its first event where it logs none) to its
    last event, a day at least. Not from its first event: a pre-period would dilute
    the rate."""
    return tuple(
        (e.experiment, sum(a.users for a in e.arms) / days)
        for e in experiments
        if (days := _days(starts.get(e.experiment, e.first_ts), e.last_ts)) is not None and e.arms
    )
