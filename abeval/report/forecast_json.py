"""The forecast as JSON (``abeval forecast --format json``): a top-level
``forecast`` object (the first metric's) and a ``forecasts`` list (every
metric's), each with ``lift``, ``interval`` [low, high], ``p_positive``, ``k``,
``slope``, ``tau``, ``signal`` and ``metric`` (docs/usage.md#forecast-the-online-lift).
Nothing here computes a statistic."""

from __future__ import annotations

from typing import Any

from abeval.analysis.forecast import ForecastReport, MetricForecast


def forecast_object(m: MetricForecast) -> dict[str, Any]:
    """One metric's forecast as plain JSON values."""
    f, p, a = m.fit, m.forecast, m.assurance
    fit = {k: v for k, v in f.to_dict().items() if k != "grid"}
    return {
        "metric": m.metric,
        "signal": m.signal,
        "status": p.status,
        "message": p.message,
        "lift": p.point,
        "interval": None if p.interval is None else list(p.interval),
        "p_positive": p.p_positive,
        "mde": p.mde,
        "p_above_mde": p.p_above_mde,
        "k": f.k,
        "experiments": list(m.experiments),
        "slope": f.slope,
        "slope_interval": None if f.slope_interval is None else list(f.slope_interval),
        "tau": f.tau,
        "tau_interval": None if f.tau_interval is None else list(f.tau_interval),
        "model": f.model,
        "reason": f.reason,
        "influence": None if p.influence is None else p.influence.to_dict(),
        "offline_lift": p.offline_lift,
        "offline_se": p.offline_se,
        "calibrated_offline_lift": p.calibrated_offline,
        "users": None if a is None else a.users,
        "assurance": None if a is None else {k: v for k, v in a.to_dict().items()},
        "users_per_day": m.users_per_day,
        "days": m.days,
        "lift_se_per_sqrt_user": m.lift_se_per_sqrt_user,
        "fit": fit,
    }


def forecast_json(report: ForecastReport) -> dict[str, Any]:
    """The whole document."""
    forecasts = [forecast_object(m) for m in report.forecasts]
    return {
        "schema_version": report.schema_version,
        "abeval_version": report.abeval_version,
        "generated_at": report.generated_at,
        "history": report.history,
        "candidate": report.candidate,
        "alpha": report.alpha,
        "mde": report.mde,
        "target_assurance": report.target_assurance,
        "forecast": forecasts[0] if forecasts else None,
        "forecasts": forecasts,
        "notes": list(report.notes),
    }
