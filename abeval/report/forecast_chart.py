"""Geometry of the forecast page's chart: the history's experiments (offline lift
across, online lift up, each with both intervals), the forecast across offline
lifts (its line and prediction band) and the candidate (its offline interval
and its prediction interval).

Only pixel positions of numbers the forecast already holds, on the scales,
ticks, points and paths of :mod:`abeval.report.charts` and
:mod:`abeval.report.agreement_charts`.
"""

from __future__ import annotations

from dataclasses import dataclass

from abeval.analysis.forecast import MetricForecast
from abeval.formatting import interval, pct, printable
from abeval.report.agreement_charts import (
    ScatterInput,
    ScatterPoint,
    axis_ticks,
    domain,
    scatter_point,
)
from abeval.report.charts import LiftPoint, Scale, Tick, _band_path, _line_path
from abeval.stats.distributions import norm_isf

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 62, 16, 14, 44
#: Room above and below the intervals, a share of the online axis.
PAD = 0.05


@dataclass(frozen=True)
class ForecastChart:
    """One metric's chart: ``plot`` = (left, top, right, bottom); ``band`` and
    ``line`` SVG path data; ``candidate`` the candidate's point with its offline
    interval and prediction interval; ``clipped``: an interval runs past the axes."""

    width: int
    height: int
    plot: tuple[float, float, float, float]
    x_zero: float | None
    y_zero: float | None
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    points: tuple[ScatterPoint, ...]
    band: str
    line: str
    candidate: ScatterPoint
    clipped: bool
    description: str


def forecast_chart(m: MetricForecast, label: str) -> ForecastChart | None:
    """The chart of ``m`` (``label`` names its online metric); None without a forecast."""
    p = m.forecast
    if p.status != "ok" or p.point is None or p.interval is None or not m.band:
        return None
    z = norm_isf(p.alpha / 2)
    inputs = [
        ScatterInput(
            r.experiment,
            r.offline_lift,
            r.online_lift,
            (r.offline_lift - z * r.offline_se, r.offline_lift + z * r.offline_se),
            (r.online_lift - z * r.online_se, r.online_lift + z * r.online_se),
        )
        for r in m.points
    ]
    spread = (p.offline_lift - z * p.offline_se, p.offline_lift + z * p.offline_se)
    mine = ScatterInput("candidate", p.offline_lift, p.point, spread, p.interval)
    xs = [i.x for i in inputs] + [mine.x] + [b.offline_lift for b in m.band]
    ys = [i.y for i in inputs] + [mine.y] + [b.point for b in m.band]
    x_ends = [e for i in (*inputs, mine) if i.x_ci is not None for e in i.x_ci]
    y_ends = [e for i in (*inputs, mine) if i.y_ci is not None for e in i.y_ci]
    y_ends += [e for b in m.band for e in (b.low, b.high)]
    left, top, right, bottom = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM
    x = Scale(*domain(xs, x_ends), left, right)
    y_lo, y_hi = domain(ys, y_ends)
    pad = (y_hi - y_lo) * PAD
    y = Scale(y_lo - pad, y_hi + pad, bottom, top)
    curve = [
        LiftPoint("", x(b.offline_lift), y(y.clamp(b.point)), y(y.clamp(b.low)), y(y.clamp(b.high)))
        for b in m.band
        if x.lo <= b.offline_lift <= x.hi
    ]
    points = tuple(scatter_point(x, y, i) for i in inputs)
    candidate = scatter_point(x, y, mine)
    description = (
        f"Offline lift of {printable(m.signal)} (across) against the online lift of "
        f"{printable(label)} (up): {len(points)} past experiments with both intervals, the "
        f"forecast line and its prediction band, and the candidate at {pct(p.offline_lift)} "
        f"offline, forecast {pct(p.point)} {interval(p.interval)}"
    )
    return ForecastChart(
        width=WIDTH,
        height=HEIGHT,
        plot=(left, top, right, bottom),
        x_zero=x(0.0) if x.lo <= 0 <= x.hi else None,
        y_zero=y(0.0) if y.lo <= 0 <= y.hi else None,
        x_ticks=axis_ticks(x),
        y_ticks=axis_ticks(y),
        points=points,
        band=_band_path(curve),
        line=_line_path(curve),
        candidate=candidate,
        clipped=candidate.clipped or any(q.clipped for q in points),
        description=description,
    )
