"""Geometry of the agreement board's scatter plots: offline lift (x) against online
lift (y), one point per experiment and treatment arm, each with both intervals
as crosshairs, the zero lines and the diagonal y = x (the offline lift carried
over as it is).

Only pixel positions of numbers the board already holds; the scales and ticks
are those of :mod:`abeval.report.charts`. An interval that runs past the axis is
cut at the plot edge and flagged (``clipped``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from abeval.formatting import interval, pct, printable
from abeval.report.charts import Scale, Tick, _tick_digits, nice_ticks

SCATTER_WIDTH = 380
SCATTER_HEIGHT = 300
LEFT, RIGHT, TOP, BOTTOM = 58, 14, 12, 40


@dataclass(frozen=True)
class ScatterInput:
    """One pair as the chart reads it (lifts and intervals, relative)."""

    label: str
    x: float
    y: float
    x_ci: tuple[float, float] | None
    y_ci: tuple[float, float] | None


@dataclass(frozen=True)
class ScatterPoint:
    """A point in pixels with its crosshair ends (None without that interval);
    ``agree``: the two lifts have the same strict sign; ``title`` for hovering
    and screen readers."""

    cx: float
    cy: float
    x_lo: float | None
    x_hi: float | None
    y_lo: float | None
    y_hi: float | None
    clipped: bool
    agree: bool
    title: str


@dataclass(frozen=True)
class Scatter:
    """One signal's scatter: ``plot`` = (left, top, right, bottom); ``diagonal``
    the y = x segment inside the plot (None when the axes share no range);
    ``fit_line`` the fitted line y = intercept + slope·x across the plot's x range
    (None without a fit; the template clips it to the plot)."""

    width: int
    height: int
    plot: tuple[float, float, float, float]
    x_zero: float | None
    y_zero: float | None
    diagonal: tuple[float, float, float, float] | None
    fit_line: tuple[float, float, float, float] | None
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    points: tuple[ScatterPoint, ...]
    clipped: bool
    description: str


def domain(values: Sequence[float], ends: Sequence[float]) -> tuple[float, float]:
    """An axis range that holds 0 and every point, and the intervals up to one more
    span of the points on either side (beyond that they are cut)."""
    core = [0.0, *values]
    lo, hi = min(core), max(core)
    span = max(hi - lo, 0.01)
    lo = max(min([lo, *ends]), lo - span)
    hi = min(max([hi, *ends]), hi + span)
    ticks = nice_ticks(lo, hi, 4)
    return min(lo, ticks[0]), max(hi, ticks[-1])


def axis_ticks(scale: Scale) -> tuple[Tick, ...]:
    values = [t for t in nice_ticks(scale.lo, scale.hi, 4) if scale.lo <= t <= scale.hi]
    digits = _tick_digits(values)
    return tuple(Tick(scale(t), pct(t, digits).replace("+", "")) for t in values)


def _diagonal(x: Scale, y: Scale) -> tuple[float, float, float, float] | None:
    lo, hi = max(x.lo, y.lo), min(x.hi, y.hi)
    if hi <= lo:
        return None
    return (x(lo), y(lo), x(hi), y(hi))


def _ends(scale: Scale, ci: tuple[float, float] | None) -> tuple[float | None, float | None, bool]:
    if ci is None:
        return None, None, False
    clipped = ci[0] < scale.lo or ci[1] > scale.hi
    return scale(scale.clamp(ci[0])), scale(scale.clamp(ci[1])), clipped


def _fit_line(
    x: Scale, y: Scale, line: tuple[float, float] | None
) -> tuple[float, float, float, float] | None:
    if line is None:
        return None
    intercept, slope = line
    return (x(x.lo), y(intercept + slope * x.lo), x(x.hi), y(intercept + slope * x.hi))


def scatter_point(x: Scale, y: Scale, p: ScatterInput) -> ScatterPoint:
    """One point on the scales ``x`` and ``y``, its crosshairs cut at the plot edge."""
    x_lo, x_hi, x_cut = _ends(x, p.x_ci)
    y_lo, y_hi, y_cut = _ends(y, p.y_ci)
    title = (
        f"{printable(p.label)}: offline {pct(p.x)} {interval(p.x_ci)}, "
        f"online {pct(p.y)} {interval(p.y_ci)}"
    )
    return ScatterPoint(
        cx=x(x.clamp(p.x)),
        cy=y(y.clamp(p.y)),
        x_lo=x_lo,
        x_hi=x_hi,
        y_lo=y_lo,
        y_hi=y_hi,
        clipped=x_cut or y_cut,
        agree=p.x * p.y > 0,
        title=title,
    )


def scatter(
    points: Sequence[ScatterInput], what: str, line: tuple[float, float] | None = None
) -> Scatter:
    """Geometry of one signal's scatter; ``what`` names it in the description;
    ``line`` = (intercept, slope) of the fitted line, if any."""
    left, top = LEFT, TOP
    right, bottom = SCATTER_WIDTH - RIGHT, SCATTER_HEIGHT - BOTTOM
    x_ends = [e for p in points if p.x_ci is not None for e in p.x_ci]
    y_ends = [e for p in points if p.y_ci is not None for e in p.y_ci]
    x = Scale(*domain([p.x for p in points], x_ends), left, right)
    y = Scale(*domain([p.y for p in points], y_ends), bottom, top)
    drawn = [scatter_point(x, y, p) for p in points]
    return Scatter(
        width=SCATTER_WIDTH,
        height=SCATTER_HEIGHT,
        plot=(left, top, right, bottom),
        x_zero=x(0.0) if x.lo <= 0 <= x.hi else None,
        y_zero=y(0.0) if y.lo <= 0 <= y.hi else None,
        diagonal=_diagonal(x, y),
        fit_line=_fit_line(x, y, line),
        x_ticks=axis_ticks(x),
        y_ticks=axis_ticks(y),
        points=tuple(drawn),
        clipped=any(p.clipped for p in drawn),
        description=f"Offline lift of {what} (across) against the online lift (up), "
        f"{len(points)} experiment arms, with both intervals, the diagonal"
        + (" and the fitted line" if line is not None else ""),
    )
