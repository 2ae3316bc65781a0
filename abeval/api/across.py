"""Across experiments: the agreement board (``Store.agreement``, ``agreement_history``)
and the forecast of a candidate's online lift (``Store.forecast``, ``forecast_history``)
from its offline or off-policy evidence (``forecast_evidence``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.api.opened import Opened
from abeval.api.options import (
    Names,
    at_least,
    cutoffs,
    forwards,
    given,
    keywords_checked,
    metric_names,
    names,
    positive,
    share,
    within,
)
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard, AgreementOptions
    from abeval.analysis.forecast import ForecastOptions, ForecastReport
    from abeval.analysis.forecast_candidate import Evidence

#: Bounds of the agreement board's resamples: fewer makes a percentile interval
#: meaningless, more only costs time and memory (resamples × pairs per signal).
MIN_RESAMPLES, MAX_RESAMPLES = 100, 100_000


class Across(Opened):
    """``Store.agreement`` and ``Store.forecast``."""

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
        override its recorded primary metrics and α (the board's α is 0.05 then).

        >>> board = store.agreement(seed=1)
        >>> board.to_frame()[["signal", "online_metric", "spearman"]].head()
        """
        from dataclasses import replace

        from abeval.analysis.agreement_board import agreement_board
        from abeval.analysis.online_metrics import DEFAULT_PRIMARY, parse_online_metrics

        catalog = self.catalog()
        metrics = parse_online_metrics(primary, DEFAULT_PRIMARY, "primary", catalog=catalog)
        options = replace(
            _agreement_options(alpha, seed, resamples, metrics, primary, backtest),
            experiments=None if experiments is None else names(experiments),
            target_propensities={k: str(v) for k, v in (target_propensities or {}).items()},
        )
        from abeval.report.notebook_across import ShownBoard

        return ShownBoard.of(agreement_board(self._store, options, catalog))

    @forwards("abeval.api.across:forecast_options")
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
        already; ``board``: the store's agreement board when it is built already.

        >>> evidence = abeval.api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
        >>> store.forecast(evidence, mde=0.01).to_frame()[["metric", "lift", "interval_low"]]
        """
        from abeval.analysis.forecast import build_forecast

        if checked is not None and options:
            raise TypeError("give either checked options or keyword options, not both")
        checked = checked if checked is not None else forecast_options(**options)
        if evidence is not None and (experiment is not None or target_propensities is not None):
            reason = "give the candidate's evidence once: evidence, or "
            reason += "{target_propensities} and {experiment}"
            both = ("target_propensities", "experiment")
            raise OptionError("evidence", None, reason, mentions=both)
        if evidence is None:
            from abeval.analysis.forecast_candidate import ope_evidence

            if target_propensities is None and experiment is None:
                raise OptionError("target_propensities", None, "give the candidate's evidence")
            forecast_inputs(target_propensities=target_propensities, experiment=experiment)
            assert experiment is not None and target_propensities is not None
            evidence = ope_evidence(self._store, experiment, target_propensities, checked.alpha)
        from abeval.report.notebook_across import ShownForecast

        return ShownForecast.of(build_forecast(self._store, evidence, checked, board))


@keywords_checked
def agreement_numbers(
    alpha: float | None, seed: int | None, resamples: int | None
) -> tuple[float, int, int]:
    """The agreement board's ``alpha``, ``seed`` and ``resamples``, each checked
    (an :class:`OptionError` naming it) and defaulted where None.

    >>> agreement_numbers(None, None, None)  # doctest: +SKIP
    (0.05, 0, 2000)
    >>> agreement_numbers(1.5, None, None)  # doctest: +SKIP
    Traceback (most recent call last):
    abeval.errors.OptionError: alpha 1.5: must be between 0 and 1 (exclusive)
    """
    from abeval.analysis.agreement import AgreementOptions

    defaults = AgreementOptions()
    alpha = defaults.alpha if alpha is None else alpha
    share("alpha", alpha)
    seed = defaults.seed if seed is None else seed
    at_least("seed", seed, 0)
    resamples = defaults.resamples if resamples is None else resamples
    within("resamples", resamples, MIN_RESAMPLES, MAX_RESAMPLES,
           f"give {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,}")  # fmt: skip
    return alpha, seed, resamples


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

    alpha_given = alpha is not None
    alpha, seed, resamples = agreement_numbers(alpha, seed, resamples)
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


@keywords_checked
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
    online metrics to keep (default all of them).

    >>> abeval.api.agreement_history("history.csv", seed=1).to_frame()
    """
    from abeval.analysis.agreement_history import history_board
    from abeval.analysis.online_metrics import DEFAULT_PRIMARY

    metrics: tuple[str, ...] = DEFAULT_PRIMARY
    if primary is not None:
        parts = primary.split(",") if isinstance(primary, str) else list(primary)
        metrics = tuple(n.strip() for n in parts if n.strip())
    from abeval.report.notebook_across import ShownBoard

    options = _agreement_options(alpha, seed, resamples, metrics, primary, backtest)
    return ShownBoard.of(history_board(history, options))


@keywords_checked
def forecast_options(
    *,
    signal: str | None = None,
    primary: Names = None,
    alpha: float | None = None,
    mde: float = 0.02,
    assurance: float = 0.8,
    users_per_day: float | None = None,
    max_days: float = 28.0,
    history: str | Path | None = None,
) -> ForecastOptions:
    """The forecast's options as ``abeval forecast`` takes them: the offline
    ``signal`` (default: the one the agreement board ranks best), the online
    metrics (default ctr,conversion and each past experiment's recorded primary
    ones), ``alpha`` (default 0.05, each past experiment at its recorded α),
    the target lift ``mde``, the ``assurance`` a test is planned for, the new
    test's ``users_per_day`` (default: the median of the store's experiments
    measuring the metric), the longest test the go / no-go calls feasible
    (``max_days``) and a ``history`` file instead of the store.

    >>> checked = abeval.api.forecast_options(mde=0.01, assurance=0.9)
    >>> store.forecast(evidence, checked)
    """
    from abeval.analysis.forecast import ForecastOptions

    alpha_given = alpha is not None
    alpha = 0.05 if alpha is None else alpha
    share("alpha", alpha)
    share("assurance", assurance)
    if not (-1 < mde < math.inf and mde != 0):
        raise OptionError("mde", mde, "give a relative lift such as 0.02")
    if users_per_day is not None:
        positive("users_per_day", users_per_day)
    positive("max_days", max_days)
    return ForecastOptions(
        signal=signal,
        primary=metric_names(primary, "primary"),
        alpha=alpha,
        mde=mde,
        assurance=assurance,
        users_per_day=users_per_day,
        max_days=max_days,
        history=None if history is None else str(history),
        primary_given=primary is not None,
        alpha_given=alpha_given,
    )


@keywords_checked
def agreement_inputs(
    *,
    history: str | Path | None = None,
    experiment: Sequence[str] | None = None,
    experiments: str | None = None,
    target_propensities: Sequence[str] | None = None,
    db: str | Path | None = None,
) -> str:
    """Which board the options ask for, checked (``abeval agreement`` takes both):
    ``"history"``, of a history file (:func:`agreement_history`, which has no store
    to pick ``experiment``s from, to read ``target_propensities`` for, nor a
    ``db``), or ``"store"`` (:meth:`Store.agreement`).

    >>> abeval.api.agreement_inputs(history="history.csv")
    'history'
    """
    if history is None:
        return "store"
    picked = "experiment" if experiment is not None else "experiments"
    none_picked = experiment is None and experiments is None
    given(picked, none_picked, "a history file has no store to pick from")
    holds = "a history file already holds its offline lifts"
    given("target_propensities", not target_propensities, holds)
    given("db", db is None, "give either {history} or {db}", ("history", "db"))
    return "history"


#: The three ways of giving a candidate's offline evidence, as a reason names them.
_WAYS = (
    "give the candidate's offline evidence once: {offline_lift} and {offline_se}, "
    "or {truth} and two {recommendations}, or {target_propensities} and {experiment}"
)
_WAY_PARAMETERS = (
    "offline_lift",
    "offline_se",
    "truth",
    "recommendations",
    "target_propensities",
    "experiment",
)


@keywords_checked
def forecast_inputs(
    *,
    offline_lift: float | None = None,
    offline_se: float | None = None,
    truth: Any = None,
    recommendations: Mapping[str, Any] | Sequence[str] | None = None,
    target_propensities: str | Path | None = None,
    experiment: str | None = None,
    history: str | Path | None = None,
) -> str:
    """Which offline evidence a forecast is given, checked without a store (the
    CLI checks it before it opens one): one way only, the typed lift
    (``offline_lift``, ``offline_se``: :func:`forecast_evidence`), the held-out
    evaluation (``truth``, ``recommendations``: :func:`forecast_evidence`) or the
    off-policy estimate (``target_propensities`` on ``experiment``'s production
    logs: :meth:`Store.forecast`, which needs a store, not a ``history`` file).
    Returns ``"typed"``, ``"evaluated"`` or ``"off_policy"``.

    >>> abeval.api.forecast_inputs(offline_lift=0.01, offline_se=0.002)
    'typed'
    """
    typed = offline_lift is not None or offline_se is not None
    evaluated = truth is not None or bool(recommendations)
    off_policy = target_propensities is not None or experiment is not None
    given("offline_lift", typed + evaluated + off_policy == 1, _WAYS, _WAY_PARAMETERS)
    if off_policy:
        reason = "give the candidate's probabilities with {experiment}"
        given("target_propensities", target_propensities is not None, reason, ("experiment",))
        reason = "name the stored experiment whose production logs {target_propensities} reweights"
        given("experiment", experiment is not None, reason, ("target_propensities",))
        given("history", history is None, "off-policy evidence reads the store; leave it out")
        return "off_policy"
    return "typed" if typed else "evaluated"


@keywords_checked
def forecast_evidence(
    *,
    offline_lift: float | None = None,
    offline_se: float | None = None,
    truth: Any = None,
    recommendations: Mapping[str, Any] | None = None,
    k: str | Sequence[int] = (5, 10),
    alpha: float = 0.05,
) -> Evidence:
    """A candidate's offline evidence for :meth:`Store.forecast`: its lift over
    production as a number (``offline_lift`` and its standard error ``offline_se``),
    or evaluated on held-out ``truth`` from the two runs of ``recommendations``
    (production named ``control``, else the first; the candidate the other), each a
    file path, a pandas DataFrame or a pyarrow Table, as :func:`abeval.evaluate` takes.

    >>> abeval.api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
    >>> runs = {"control": "a.csv", "candidate": "b.csv"}
    >>> abeval.api.forecast_evidence(truth="truth.csv", recommendations=runs)
    """
    from abeval.analysis.forecast_candidate import evaluation_evidence, typed_evidence
    from abeval.stats.forecast import MAX_LIFT

    if (offline_lift is not None or offline_se is not None) and (
        truth is not None or recommendations
    ):
        forecast_inputs(  # given both ways: refused, naming them
            offline_lift=offline_lift,
            offline_se=offline_se,
            truth=truth,
            recommendations=recommendations,
        )
    if truth is None and not recommendations:
        if offline_lift is None or offline_se is None:
            missing, other = ("offline_lift", "offline_se")[:: 1 if offline_lift is None else -1]
            raise OptionError(
                missing,
                None,
                f"needed with {{{other}}}: an offline lift and its standard error go together",
                mentions=(other,),
            )
        if not math.isfinite(offline_lift):
            raise OptionError("offline_lift", offline_lift, "give a finite relative lift")
        if not 0 <= offline_se < math.inf:
            raise OptionError("offline_se", offline_se, "give a standard error, 0 or more")
        for name, value in (("offline_lift", offline_lift), ("offline_se", offline_se)):
            if abs(value) > MAX_LIFT:
                reason = f"beyond ±{MAX_LIFT:g} (a relative lift of ±100,000%); give one within it"
                raise OptionError(name, value, reason)
        return typed_evidence(offline_lift, offline_se)
    if truth is None:
        raise OptionError("truth", None, "give the held-out truth the runs are evaluated on")
    if recommendations is None or len(recommendations) != 2:
        given = len(recommendations or ())
        reason = f"{given} run(s) given; give two: production's (named control) and the candidate's"
        raise OptionError("recommendations", None, reason)
    share("alpha", alpha)
    return evaluation_evidence(truth, dict(recommendations), k=cutoffs(k), alpha=alpha)


@keywords_checked
@forwards("abeval.api.across:forecast_options")
def forecast_history(
    history: str | Path,
    evidence: Evidence,
    checked: ForecastOptions | None = None,
    **options: Any,
) -> ForecastReport:
    """:meth:`Store.forecast` from a history file (CSV or Parquet: experiment,
    signal, offline_lift, offline_se, online_lift, online_se; optional metric,
    arm, date, users) instead of a store.

    >>> evidence = abeval.api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
    >>> abeval.api.forecast_history("history.csv", evidence, mde=0.01).to_frame()
    """
    from dataclasses import replace

    from abeval.analysis.forecast import build_forecast

    if checked is not None and options:
        raise TypeError("give either checked options or keyword options, not both")
    checked = checked if checked is not None else forecast_options(**options)
    from abeval.report.notebook_across import ShownForecast

    return ShownForecast.of(build_forecast(None, evidence, replace(checked, history=str(history))))
