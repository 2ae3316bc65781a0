"""How well the forecast model (:mod:`abeval.stats.forecast`) would have
predicted each past experiment from the others (docs/metrics.md#noise-aware-board).

- :func:`loo_score`: leave one experiment out (all its arms), fit the forecast
  model on the rest, and score the held-out online lifts by their log
  predictive density; the same with an intercept-only model (online lift =
  α + u + e, no offline signal), with the same τ grid and Q-profile weights. The
  board ranks signals by the mean gain in log score (nats per experiment arm):
  above 0, the offline signal made better forecasts than knowing nothing
  about the candidate.
- :func:`backtest`: in time order, each experiment forecast from the ones
  before it: how often the interval covered the observed lift, the sign
  matched, the mean absolute error, and what gating on P(lift > 0) > 0.5
  would have kept and missed.

The observed lift is the true one plus its noise: its predictive is the
forecast's mixture with sᵢ² added to each component's variance. Degenerate
inputs give a ``status``, never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from abeval.stats.forecast import (
    MIN_EXPERIMENTS,
    Forecast,
    HistoryRow,
    fit,
    log_score,
    observed_interval,
    predict,
)
from abeval.stats.results import JsonResult

ScoreStatus = Literal["ok", "too_few_experiments"]


@dataclass(frozen=True)
class PredictiveScore(JsonResult):
    """Mean log predictive density of the held-out online lifts, by the forecast
    model (``log_score``) and the intercept-only one (``baseline_log_score``),
    over ``scored`` rows of ``experiments``; ``gain`` = the difference."""

    experiments: int
    scored: int
    log_score: float | None
    baseline_log_score: float | None
    gain: float | None
    status: ScoreStatus
    message: str


@dataclass(frozen=True)
class BacktestStep(JsonResult):
    """One experiment forecast from ``history`` earlier ones: the forecast of its
    true lift (``point``, ``interval``, ``p_positive``), the 1 − α interval for
    the *observed* lift (the forecast widened by its noise), and what was seen."""

    experiment: str
    history: int
    observed: float
    observed_se: float
    observed_side: int
    point: float
    interval: tuple[float, float]
    observed_interval: tuple[float, float]
    p_positive: float
    covered: bool
    sign_right: bool
    kept: bool


@dataclass(frozen=True)
class Backtest(JsonResult):
    """The steps and their summary. ``kept``: forecasts with P(lift > 0) > 0.5;
    of those ``kept_better``/``kept_worse`` were significantly better/worse
    online; ``missed``: not kept but significantly better online;
    ``avoided``: not kept and significantly worse."""

    steps: tuple[BacktestStep, ...]
    forecast: int
    skipped: int
    coverage: float | None
    sign_accuracy: float | None
    mean_absolute_error: float | None
    kept: int
    kept_better: int
    kept_worse: int
    missed: int
    avoided: int
    status: ScoreStatus
    message: str


def intercept_only(rows: Sequence[HistoryRow]) -> Forecast:
    """The forecast of a new experiment's true lift without any offline signal:
    y = α + u + e, the forecast model's intercept-only fit
    (:func:`abeval.stats.forecast.fit` with ``intercept_only``), with the same
    interval method as the model it is compared with."""
    return predict(fit(rows, intercept_only=True), 0.0, 0.0)


def _by_experiment(rows: Sequence[HistoryRow]) -> dict[str, list[HistoryRow]]:
    groups: dict[str, list[HistoryRow]] = {}
    for r in rows:
        groups.setdefault(r.experiment, []).append(r)
    return groups


def loo_score(rows: Sequence[HistoryRow]) -> PredictiveScore:
    """Leave-one-experiment-out log scores of the forecast model and the
    intercept-only model (module docstring). An experiment whose remaining
    history cannot be fitted (fewer than 3 experiments, offline lifts all
    equal) is left out of both."""
    groups = _by_experiment(rows)
    k = len(groups)
    if k < MIN_EXPERIMENTS + 1:
        return PredictiveScore(
            k, 0, None, None, None, "too_few_experiments",
            f"{k} experiments: leaving one out needs {MIN_EXPERIMENTS + 1} or more",
        )  # fmt: skip
    model: list[float] = []
    base: list[float] = []
    for name, held in groups.items():
        rest = [r for r in rows if r.experiment != name]
        fitted = fit(rest)
        if fitted.status != "ok":
            continue
        baseline = intercept_only(rest)
        for r in held:
            f = predict(fitted, r.offline_lift, r.offline_se)
            if f.status != "ok":
                continue
            scored = log_score(f, r.online_lift, r.online_se)
            against = log_score(baseline, r.online_lift, r.online_se)
            if scored is None or against is None:
                continue
            model.append(scored)
            base.append(against)
    if not model:
        return PredictiveScore(
            k, 0, None, None, None, "too_few_experiments",
            "no experiment could be forecast from the others",
        )  # fmt: skip
    score = sum(model) / len(model)
    baseline_score = sum(base) / len(base)
    return PredictiveScore(k, len(model), score, baseline_score, score - baseline_score, "ok", "")


def backtest(
    rows: Sequence[HistoryRow],
    order: Sequence[str],
    alpha: float = 0.05,
) -> Backtest:
    """Forecast each experiment of ``order`` (earliest first) from those before it
    (module docstring). Experiments with fewer than 3 earlier ones, or whose
    earlier ones cannot be fitted, are ``skipped``. ``observed_side`` is +1
    (−1) when the observed lift's 1 − α normal interval lies above (below) 0."""
    from abeval.stats.distributions import norm_isf

    groups = _by_experiment(rows)
    z = norm_isf(alpha / 2)
    steps: list[BacktestStep] = []
    skipped = 0
    for i, name in enumerate(order):
        before = [r for n in order[:i] for r in groups.get(n, [])]
        fitted = fit(before, alpha) if len(order[:i]) >= MIN_EXPERIMENTS else None
        if fitted is None or fitted.status != "ok":
            skipped += 1
            continue
        for r in groups.get(name, []):
            f = predict(fitted, r.offline_lift, r.offline_se, alpha)
            if f.status != "ok" or f.point is None or f.interval is None:
                continue  # pragma: no cover - a fitted model always forecasts
            seen = observed_interval(f, r.online_se, alpha)
            if seen is None:
                continue
            y = r.online_lift
            low, high = y - z * r.online_se, y + z * r.online_se
            p = f.p_positive if f.p_positive is not None else 0.5
            steps.append(
                BacktestStep(
                    experiment=name,
                    history=i,
                    observed=y,
                    observed_se=r.online_se,
                    observed_side=1 if low > 0 else -1 if high < 0 else 0,
                    point=f.point,
                    interval=f.interval,
                    observed_interval=seen,
                    p_positive=p,
                    covered=seen[0] <= y <= seen[1],
                    sign_right=(f.point > 0) == (y > 0),
                    kept=p > 0.5,
                )
            )
    return _summary(steps, skipped, MIN_EXPERIMENTS)


def _summary(steps: list[BacktestStep], skipped: int, needed: int) -> Backtest:
    n = len(steps)
    if not n:
        return Backtest(
            (), 0, skipped, None, None, None, 0, 0, 0, 0, 0, "too_few_experiments",
            f"no experiment had {needed} or more earlier ones to forecast it from",
        )  # fmt: skip
    kept = [s for s in steps if s.kept]
    dropped = [s for s in steps if not s.kept]
    return Backtest(
        steps=tuple(steps),
        forecast=n,
        skipped=skipped,
        coverage=sum(s.covered for s in steps) / n,
        sign_accuracy=sum(s.sign_right for s in steps) / n,
        mean_absolute_error=sum(abs(s.point - s.observed) for s in steps) / n,
        kept=len(kept),
        kept_better=sum(s.observed_side == 1 for s in kept),
        kept_worse=sum(s.observed_side == -1 for s in kept),
        missed=sum(s.observed_side == 1 for s in dropped),
        avoided=sum(s.observed_side == -1 for s in dropped),
        status="ok",
        message="",
    )
