"""The forecast's influence diagnostic (docs/metrics.md#forecast): each past
experiment left out in turn, the one whose online lift the others forecast worst
named, with the candidate's forecast from the fit without it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from abeval.stats.forecast import (
    INFLUENCE_ALPHA,
    MIN_EXPERIMENTS,
    Forecast,
    HistoryRow,
    Influence,
    _observed_mixture,
    _one,
    fit,
    predict,
)


def influence(rows: Sequence[HistoryRow], forecast: Forecast) -> Influence | None:
    """Leave each past experiment out, fit the others, and score its online lift
    under their forecast of what its test measures (the forecast of its true
    lift widened by its standard error): the lowest two-sided predictive
    p-value, times k (Bonferroni), names the most outlying experiment; with it,
    the candidate's forecast from the fit without it. None when ``forecast``
    is not ``ok`` or no experiment could be left out (fewer than 4)."""
    if forecast.status != "ok" or len(rows) <= MIN_EXPERIMENTS:
        return None
    worst: tuple[float, int, Forecast] | None = None
    for i, r in enumerate(rows):
        rest = [o for j, o in enumerate(rows) if j != i]
        fitted = fit(rest, forecast.alpha)
        held = predict(fitted, r.offline_lift, r.offline_se, forecast.alpha)
        if held.status != "ok" or held.point is None:
            continue
        below = float(_observed_mixture(held, r.online_se).cdf(_one(r.online_lift))[0])
        p = 2 * min(below, 1 - below)
        if worst is None or p < worst[0]:
            worst = (p, i, held)
    if worst is None:
        return None
    p, i, held = worst
    rest = [o for j, o in enumerate(rows) if j != i]
    without = predict(
        fit(rest, forecast.alpha), forecast.offline_lift, forecast.offline_se, forecast.alpha
    )
    adjusted = min(1.0, p * len(rows))
    assert held.point is not None
    return Influence(
        experiment=rows[i].experiment or f"row {i + 1}",
        p_value=adjusted,
        flagged=adjusted < INFLUENCE_ALPHA,
        point=without.point,
        interval=without.interval,
        observed=rows[i].online_lift,
        expected=held.point,
    )


def with_influence(rows: Sequence[HistoryRow], forecast: Forecast) -> Forecast:
    """``forecast`` with its :func:`influence` diagnostic."""
    found = influence(rows, forecast)
    return forecast if found is None else replace(forecast, influence=found)
