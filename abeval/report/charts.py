"""Geometry of the report's inline SVG charts.

The Jinja macros in ``reports/_macros.html.j2`` draw the charts; this module
only maps values the report already holds to pixel coordinates (scales, ticks,
path strings). Nothing here estimates anything: an interval is drawn where the
report model puts it, clipped with a marker when it runs off the axis.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from abeval.formatting import count, pct, short_day

#: Width and height (SVG user units) of the interval bars in the metric tables.
BAR_WIDTH = 180
BAR_HEIGHT = 22
BAR_PAD = 8


@dataclass(frozen=True)
class Scale:
    """Linear map from the domain ``[lo, hi]`` to pixels ``[start, end]``."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo
        t = (value - self.lo) / span if span else 0.5
        return round(self.start + t * (self.end - self.start), 2)

    def clamp(self, value: float) -> float:
        return min(max(value, self.lo), self.hi)


@dataclass(frozen=True)
class Tick:
    """An axis tick at pixel ``pos`` with its ``label``."""

    pos: float
    label: str


def nice_step(span: float, count: int) -> float:
    """A 1, 2, 2.5 or 5 × 10ⁿ step that cuts ``span`` into about ``count`` parts."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]``."""
    step = nice_step(hi - lo, count)
    first = math.floor(lo / step + 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-6:
        ticks.append(round(value, 12) + 0.0)  # + 0.0 turns -0.0 into 0.0
        value += step
    return ticks


# --------------------------------------------------------------------------- interval bars


@dataclass(frozen=True)
class IntervalBar:
    """An interval drawn as a bar around zero on a table's shared axis.

    ``lo``/``hi``/``point`` are pixel positions (None when the report has no
    interval or estimate); ``clipped_lo``/``clipped_hi`` say the interval runs
    past the axis on that side; ``label`` describes it for screen readers.
    """

    width: int
    height: int
    zero: float
    lo: float | None
    hi: float | None
    point: float | None
    clipped_lo: bool
    clipped_hi: bool
    label: str


def bar_scale(intervals: Iterable[Sequence[float] | None], width: int = BAR_WIDTH) -> Scale:
    """A symmetric axis around zero shared by the bars of one table.

    It spans the widest interval end, but at most four times the median one, so a
    single very wide interval does not flatten every other bar (that one is clipped).
    """
    ends = [max(abs(ci[0]), abs(ci[1])) for ci in intervals if ci is not None]
    reach = min(max(ends), 4 * statistics.median(ends)) if ends else 0.05
    return Scale(-nice_reach(reach), nice_reach(reach), BAR_PAD, width - BAR_PAD)


def nice_reach(value: float) -> float:
    """The next round number above ``value`` (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10ⁿ),
    so the bar axis reads ±15% rather than ±11.1%."""
    value = max(value * 1.02, 1e-3)
    magnitude = 10 ** math.floor(math.log10(value))
    for factor in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        if value <= factor * magnitude + 1e-12:
            return factor * magnitude
    return 10 * magnitude


def interval_bar(scale: Scale, ci: Sequence[float] | None, effect: float | None) -> IntervalBar:
    """Pixel geometry of one interval bar on ``scale``."""
    lo = hi = point = None
    clipped_lo = clipped_hi = False
    if ci is not None:
        lo, hi = scale(scale.clamp(ci[0])), scale(scale.clamp(ci[1]))
        clipped_lo, clipped_hi = ci[0] < scale.lo, ci[1] > scale.hi
    if effect is not None:
        point = scale(scale.clamp(effect))
    if ci is not None:
        label = f"interval {pct(ci[0])} to {pct(ci[1])}"
        if effect is not None:
            label = f"lift {pct(effect)}, {label}"
    else:
        label = "no interval"
    return IntervalBar(
        width=int(scale.end + BAR_PAD),
        height=BAR_HEIGHT,
        zero=scale(0.0),
        lo=lo,
        hi=hi,
        point=point,
        clipped_lo=clipped_lo,
        clipped_hi=clipped_hi,
        label=label,
    )


def bar_axis(scale: Scale) -> tuple[Tick, ...]:
    """Labels for the ends and the middle of a table's bar axis."""
    digits = 0 if abs(round(scale.hi * 100) - scale.hi * 100) < 1e-9 else 1
    return (
        Tick(scale(scale.lo), pct(scale.lo, digits)),
        Tick(scale(0.0), "0"),
        Tick(scale(scale.hi), pct(scale.hi, digits)),
    )


def difference_axis(scale: Scale) -> tuple[Tick, ...]:
    """Labels for the ends and the middle of a bar axis of differences in the
    metrics' own units (the evaluation page; :func:`bar_axis` labels percentages)."""
    return (
        Tick(scale(scale.lo), f"{scale.lo:+g}"),
        Tick(scale(0.0), "0"),
        Tick(scale(scale.hi), f"{scale.hi:+g}"),
    )


# --------------------------------------------------------------------------- line chart

CHART_WIDTH = 560
CHART_HEIGHT = 240
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 56, 16, 14, 30


@dataclass(frozen=True)
class LiftPoint:
    """One day of a lift chart in pixels (``y`` is None when that day has no lift)."""

    day: str
    x: float
    y: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class LiftChart:
    """Cumulative relative lift of one metric and arm over the days of the test.

    ``band`` and ``line`` are SVG path data for the interval band and the lift
    line; ``zero`` the y of the zero line; ``plot`` the (left, top, right, bottom)
    of the plotting area; ``clipped`` says that early intervals run past the axis
    (they are cut at the plot edge); ``last`` is the final point with its label.
    """

    metric: str
    label: str
    arm: str
    width: int
    height: int
    plot: tuple[float, float, float, float]
    band: str
    line: str
    zero: float
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    last: tuple[float, float, str] | None
    clipped: bool
    points: tuple[LiftPoint, ...]
    description: str
    #: ``cumulative`` (all activity up to each day) or ``day`` (each day's alone).
    kind: str = "cumulative"


@dataclass(frozen=True)
class DayLift:
    """The input of :func:`lift_chart`: one day's cumulative lift and interval;
    ``shown`` marks the point the report's tables stand at (the labelled one)."""

    day: str
    lift: float | None
    ci: Sequence[float] | None
    shown: bool = False


def _x_scale(days: int, left: float, right: float) -> Scale:
    return Scale(0.0, float(max(days - 1, 1)), left, right)


def tick_indices(n: int, most: int = 7) -> list[int]:
    """Indices of at most about ``most`` evenly spaced labels among ``n`` days,
    always the first and the last."""
    if n <= 0:
        return []
    step = max(1, math.ceil(n / most))
    picked = list(range(0, n, step))
    if picked[-1] != n - 1:
        # Move the last label to the last day rather than crowd it with a new one.
        if len(picked) > 1:
            picked[-1] = n - 1
        else:
            picked.append(n - 1)
    return picked


def lift_chart(
    metric: str, label: str, arm: str, series: Sequence[DayLift], kind: str = "cumulative"
) -> LiftChart:
    """Geometry of the lift chart of one metric and arm: cumulative, or of each
    day's activity alone (``kind="day"``)."""
    left, top = MARGIN_LEFT, MARGIN_TOP
    right, bottom = CHART_WIDTH - MARGIN_RIGHT, CHART_HEIGHT - MARGIN_BOTTOM
    days = [p.day for p in series]
    x = _x_scale(len(series), left, right)

    lifts = [p.lift for p in series if p.lift is not None]
    cis = [p.ci for p in series if p.ci is not None]
    lo_values = [0.0, *lifts, *(ci[0] for ci in cis)]
    hi_values = [0.0, *lifts, *(ci[1] for ci in cis)]
    lo, hi = min(lo_values), max(hi_values)
    clipped = False
    if cis:
        # Early days have wide intervals: keep the axis readable around the latest
        # interval and cut the band at the plot edge (the chart says so).
        last_lo, last_hi = cis[-1][0], cis[-1][1]
        reach = max(last_hi - last_lo, 1e-6) * 1.5
        cap_lo = min(0.0, last_lo - reach, *lifts)
        cap_hi = max(0.0, last_hi + reach, *lifts)
        clipped = lo < cap_lo or hi > cap_hi
        lo, hi = max(lo, cap_lo), min(hi, cap_hi)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.01, hi + 0.01
    ticks = nice_ticks(lo, hi, 5)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    y = Scale(lo, hi, bottom, top)

    points = []
    for i, p in enumerate(series):
        points.append(
            LiftPoint(
                day=p.day,
                x=x(i),
                y=y(p.lift) if p.lift is not None else None,
                lo=y(y.clamp(p.ci[0])) if p.ci is not None else None,
                hi=y(y.clamp(p.ci[1])) if p.ci is not None else None,
            )
        )
    band = _band_path(points)
    line = _line_path(points)
    last = None
    final = next((p for p in series if p.shown and p.lift is not None), None) or next(
        (p for p in reversed(series) if p.lift is not None), None
    )
    if final is not None:
        fp = points[days.index(final.day)]
        assert fp.y is not None
        last = (fp.x, fp.y, pct(final.lift))
    what = "Cumulative relative lift" if kind == "cumulative" else "Relative lift of each day alone"
    description = f"{what} of {label}, {arm} against control, by day"
    if series and final is not None:
        description += (
            f": {pct(series[0].lift)} on {series[0].day}, {pct(final.lift)} on {final.day}"
        )
    return LiftChart(
        metric=metric,
        label=label,
        arm=arm,
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        plot=(left, top, right, bottom),
        band=band,
        line=line,
        zero=y(0.0),
        x_ticks=tuple(Tick(x(i), short_day(days[i])) for i in tick_indices(len(days))),
        y_ticks=tuple(Tick(y(t), pct(t, _tick_digits(ticks))) for t in ticks),
        last=last,
        clipped=clipped,
        points=tuple(points),
        description=description,
        kind=kind,
    )


def _tick_digits(ticks: Sequence[float]) -> int:
    """Decimals that tell the percentage ticks apart."""
    if len(ticks) < 2:
        return 1
    step = abs(ticks[1] - ticks[0]) * 100
    for digits in (0, 1, 2, 3):
        if abs(round(step, digits) - step) < 1e-9:
            return digits
    return 3


def _runs(points: Sequence[LiftPoint], key: str) -> list[list[LiftPoint]]:
    """Consecutive points that have ``key`` (``y`` or ``lo``): gaps break a path."""
    runs: list[list[LiftPoint]] = [[]]
    for p in points:
        if getattr(p, key) is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(p)
    return [r for r in runs if r]


def _line_path(points: Sequence[LiftPoint]) -> str:
    parts = []
    for run in _runs(points, "y"):
        parts.append("M" + " L".join(f"{p.x:g},{p.y:g}" for p in run))
    return " ".join(parts)


def _band_path(points: Sequence[LiftPoint]) -> str:
    parts = []
    for run in _runs(points, "lo"):
        upper = " L".join(f"{p.x:g},{p.hi:g}" for p in run)
        lower = " L".join(f"{p.x:g},{p.lo:g}" for p in reversed(run))
        parts.append(f"M{upper} L{lower} Z")
    return " ".join(parts)


# --------------------------------------------------------------------------- users per day


@dataclass(frozen=True)
class Bar:
    """One bar: arm index ``series`` (for its colour), pixel box, and its value as text."""

    series: int
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True)
class UsersChart:
    """New users per day and arm as grouped bars (from the cumulative counts the
    daily points carry). ``arms`` names the series in legend order."""

    width: int
    height: int
    plot: tuple[float, float, float, float]
    arms: tuple[str, ...]
    bars: tuple[Bar, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    description: str


USERS_WIDTH = 1120
USERS_HEIGHT = 190


def users_chart(days: Sequence[str], cumulative: Mapping[str, Sequence[int]]) -> UsersChart:
    """Grouped bars of the users who joined each arm on each day.

    ``cumulative`` maps each arm to its users enrolled by the end of each of ``days``.
    """
    left, top = MARGIN_LEFT, MARGIN_TOP
    right, bottom = USERS_WIDTH - MARGIN_RIGHT, USERS_HEIGHT - MARGIN_BOTTOM
    arms = tuple(cumulative)
    new: dict[str, list[int]] = {}
    for arm, totals in cumulative.items():
        previous = 0
        new[arm] = []
        for total in totals:
            new[arm].append(max(total - previous, 0))
            previous = total
    top_value = max((v for values in new.values() for v in values), default=0) or 1
    ticks = nice_ticks(0.0, float(top_value), 4)
    y = Scale(0.0, max(float(top_value), ticks[-1]), bottom, top)
    slot = (right - left) / max(len(days), 1)
    group = slot * 0.78
    width = group / max(len(arms), 1)
    bars = []
    for i, day in enumerate(days):
        start = left + i * slot + (slot - group) / 2
        for j, arm in enumerate(arms):
            value = new[arm][i]
            bars.append(
                Bar(
                    series=j,
                    x=round(start + j * width, 2),
                    y=y(value),
                    width=round(max(width - 1, 0.5), 2),
                    height=round(bottom - y(value), 2),
                    title=f"{day}: {count(value)} new users in {arm}",
                )
            )
    x_ticks = tuple(
        Tick(round(left + (i + 0.5) * slot, 2), short_day(days[i]))
        for i in tick_indices(len(days), 14)
    )
    description = "New users per day in each arm: " + ", ".join(
        f"{arm} {count(sum(values))} in all" for arm, values in new.items()
    )
    return UsersChart(
        width=USERS_WIDTH,
        height=USERS_HEIGHT,
        plot=(left, top, right, bottom),
        arms=arms,
        bars=tuple(bars),
        x_ticks=x_ticks,
        y_ticks=tuple(Tick(y(t), count(t)) for t in ticks),
        description=description,
    )
