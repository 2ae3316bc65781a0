"""What ``abeval forecast`` chose and why, as codes and numbers the presenters
turn into sentences (docs/usage.md#forecast-the-online-lift):

- the signal (:class:`SignalChoice`): the one ``--signal`` names, else the
  agreement board's best predictor of the online metric
  (:func:`best_on_board`), else the next the board ranks when the candidate has
  no lift on the best or the model cannot fit it; of a history file, its only
  signal;
- the traffic a test runs at (:class:`Traffic`): ``--users-per-day``, else the
  median users per day of the store's experiments on the same online metric;
- the go / no-go (:class:`Recommendation`, :func:`recommend`) from P(lift > 0)
  and the days a test of the target assurance takes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.analysis.agreement_headline import best_from_rows
from abeval.analysis.forecast_store import signal_key
from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    from abeval.analysis.agreement import SignalSummary

SignalReason = Literal["given", "best_on_board", "next_on_board", "only_signal"]
TrafficSource = Literal["given", "median_of_experiments", "unknown"]
Verdict = Literal["go", "test_if_cheap", "no_go", "no_forecast"]

#: The board's ranking's first criterion (:data:`abeval.analysis.agreement.RANKING`).
RANKING_CRITERION = "predictive_gain"

#: The go / no-go rule (docs/usage.md#forecast-the-online-lift): ``go`` when
#: P(lift > 0) is at least GO_P and a test of the target assurance takes at most
#: the maximum days; ``no_go`` when P(lift > 0) is below NO_GO_P; else ``test_if_cheap``.
GO_P = 0.8
NO_GO_P = 0.5
#: The longest test the go / no-go calls feasible by default (``--max-days``).
MAX_DAYS = 28.0


@dataclass(frozen=True)
class SignalChoice(JsonResult):
    """Why the forecast uses ``signal``: ``reason`` is ``given`` (``--signal``),
    ``best_on_board`` (the board ranks it first for the metric), ``next_on_board``
    (``best``, the board's first, could not be used: ``passed_over`` says why) or
    ``only_signal`` (a history file's only one). ``rank`` is the signal's rank on
    the board, ``criterion`` and ``value`` what the board ranks by, ``spearman``
    with its interval over ``experiments``: how well it predicted."""

    signal: str
    reason: SignalReason
    rank: int | None = None
    best: str | None = None
    passed_over: str | None = None
    criterion: str | None = None
    value: float | None = None
    spearman: float | None = None
    spearman_ci: tuple[float, float] | None = None
    experiments: int | None = None


def board_key(s: SignalSummary) -> str:
    """The name a board row's signal goes by in the forecast (:func:`signal_key`)."""
    return signal_key(s.signal, s.source)


def best_on_board(rows: Sequence[SignalSummary], metric: str) -> SignalSummary | None:
    """The board's best predictor of ``metric``, as the board's headline names it
    (:func:`abeval.analysis.agreement_headline.best_from_rows`); None when the
    board has no answer (no signal, or none with a Spearman correlation)."""
    found = best_from_rows(rows, metric)
    return found.row if found.status in ("ok", "not_independent") else None


def criterion(row: SignalSummary) -> tuple[str, float | None]:
    """What put ``row`` where it is on the board, and its value: the predictive gain,
    else the family-wise p-value, else Spearman."""
    if row.predictive_gain is not None:
        return RANKING_CRITERION, row.predictive_gain
    if row.familywise_p is not None:
        return "familywise_p", row.familywise_p
    return "spearman", row.spearman


def signal_choice(
    signal: str,
    given: bool,
    rows: Sequence[SignalSummary] | None,
    metric: str,
    passed_over: str | None = None,
) -> SignalChoice:
    """The choice of ``signal`` for ``metric``: ``given`` by the user, else by the
    board's ``rows`` (None: a history file, no board); ``passed_over``: why the
    board's best was not used, when it was not."""
    row = None if rows is None else next(
        (r for r in rows if r.online_metric == metric and board_key(r) == signal), None
    )  # fmt: skip
    best = None if rows is None else best_on_board(rows, metric)
    if given:
        reason: SignalReason = "given"
    elif rows is None:
        reason = "only_signal"
    elif best is not None and board_key(best) == signal:
        reason = "best_on_board"
    else:
        reason = "next_on_board"
    return SignalChoice(
        signal=signal,
        reason=reason,
        rank=None if row is None else row.rank,
        best=None if best is None or reason != "next_on_board" else board_key(best),
        passed_over=passed_over if reason == "next_on_board" else None,
        criterion=None if row is None else criterion(row)[0],
        value=None if row is None else criterion(row)[1],
        spearman=None if row is None else row.spearman,
        spearman_ci=None if row is None else row.spearman_ci,
        experiments=None if row is None else row.experiments,
    )


@dataclass(frozen=True)
class Traffic(JsonResult):
    """The users per day a new test of ``metric`` runs at: ``given``
    (``--users-per-day``), the ``median_of_experiments`` (the users per day of each of
    the store's ``experiments`` measuring ``metric``, from its first exposure to its
    last event; ``names`` says which), or ``unknown``."""

    metric: str
    source: TrafficSource
    users_per_day: float | None = None
    experiments: int = 0
    names: tuple[str, ...] = ()


def traffic(metric: str, given: float | None, rates: Iterable[tuple[str, float]]) -> Traffic:
    """``given``, else the median of ``rates`` (each experiment's name and users per
    day)."""
    if given is not None:
        return Traffic(metric, "given", given)
    found = [(name, r) for name, r in rates if r > 0]
    if not found:
        return Traffic(metric, "unknown")
    median = statistics.median(r for _, r in found)
    return Traffic(metric, "median_of_experiments", median, len(found), tuple(n for n, _ in found))


@dataclass(frozen=True)
class Recommendation(JsonResult):
    """The go / no-go of one metric's forecast, by :data:`GO_P`, :data:`NO_GO_P`
    and ``max_days``: ``verdict`` and the numbers it was read from; ``feasible``
    None when the days a test takes are unknown."""

    verdict: Verdict
    p_positive: float | None
    p_above_mde: float | None
    users: int | None
    days: float | None
    max_days: float
    feasible: bool | None
    go_p: float = GO_P
    no_go_p: float = NO_GO_P


def recommend(
    p_positive: float | None,
    p_above_mde: float | None,
    users: int | None,
    days: float | None,
    max_days: float,
) -> Recommendation:
    """``go`` when P(lift > 0) ≥ :data:`GO_P` and the test takes at most
    ``max_days``; ``no_go`` when P(lift > 0) < :data:`NO_GO_P`; else
    ``test_if_cheap``; ``no_forecast`` without a P(lift > 0)."""
    feasible = None if days is None else days <= max_days
    verdict: Verdict
    if p_positive is None:
        verdict = "no_forecast"
    elif p_positive < NO_GO_P:
        verdict = "no_go"
    elif p_positive >= GO_P and feasible:
        verdict = "go"
    else:
        verdict = "test_if_cheap"
    return Recommendation(verdict, p_positive, p_above_mde, users, days, max_days, feasible)
