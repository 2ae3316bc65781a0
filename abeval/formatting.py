"""Number and date formatting: the one way abeval writes a value as text.

The HTML report registers these as Jinja filters; the text report and the
messages of the analysis layer use them too, which is why the module sits below
both. Formatting only: every function turns one value that the report model already
holds into text. ``None`` (an undefined number, see
:mod:`abeval.stats.results`) always prints as ``n/a``. The tests format values
from ``ExperimentReport.to_dict()`` with these same functions and look for the
results in the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from abeval.choices import FEASIBLE_DAYS

NA = "n/a"


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: every character that is not printable
    (escape sequences, newlines, tabs, zero-width and direction marks) is written
    as its Python escape, so a name such as ``\\x1b]0;pwned\\a`` cannot retitle
    the terminal or break a one-line message. Other text, accents included, is
    kept as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def pct(x: float | None, digits: int = 2) -> str:
    """A signed percentage of a share: ``0.0132`` → ``+1.32%``."""
    if x is None:
        return NA
    return f"{x * 100:+.{digits}f}%"


def share(x: float | None, digits: int = 1) -> str:
    """An unsigned percentage: ``0.882`` → ``88.2%``."""
    if x is None:
        return NA
    return f"{x * 100:.{digits}f}%"


def interval(ci: Sequence[float] | None, digits: int = 2) -> str:
    """A relative interval: ``(-0.0117, 0.038)`` → ``[-1.17%, +3.80%]``."""
    if ci is None:
        return NA
    return f"[{pct(ci[0], digits)}, {pct(ci[1], digits)}]"


class ShownLift(Protocol):
    """What :func:`lift_interval` reads of a lift (:class:`abeval.stats.results.Lift`)."""

    @property
    def interval(self) -> tuple[float, float] | None: ...

    @property
    def p_value(self) -> float | None: ...

    @property
    def interval_note(self) -> str: ...


UNBOUNDED = "unbounded"


def lift_interval(lift: ShownLift) -> str:
    """The interval a lift shows (its corrected one where it has it), or
    ``unbounded`` when Fieller's relative interval is unbounded while the p-value
    stands (the control mean cannot be told from 0; the lift's ``interval_note``)."""
    if lift.interval is None and lift.p_value is not None and lift.interval_note:
        return UNBOUNDED
    return interval(lift.interval)


def unbounded_notes(lifts: Iterable[ShownLift]) -> tuple[str, ...]:
    """Why the ``unbounded`` intervals of a table are unbounded, each sentence once
    (said under the table rather than on every row)."""
    notes = (lift.interval_note for lift in lifts if lift_interval(lift) == UNBOUNDED)
    return tuple(dict.fromkeys(notes))


def pvalue(p: float | None) -> str:
    """A p-value with four decimals, ``<0.0001`` below that."""
    if p is None:
        return NA
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def count(x: float | None) -> str:
    """A count or a sum with thousands separators: ``30357.0`` → ``30,357``,
    ``100054.34000000008`` → ``100,054.34``."""
    if x is None:
        return NA
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.2f}"


def size(n_bytes: int) -> str:
    """A file size in decimal units: ``812 bytes``, ``41.3 MB``, ``1.2 GB``."""
    if n_bytes < 1_000:
        return f"{n_bytes} bytes"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n_bytes < scale * 1_000 or unit == "GB":
            return f"{n_bytes / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def days_text(days: float, users_per_day: float, more: str = "") -> str:
    """How long a test takes at this traffic: ``about 46.9 days at 20,000 users per
    day``; beyond a year, ``not feasible at this traffic (...)``."""
    at = f"{more}days at {users_per_day:,.0f} users per day"
    if days > FEASIBLE_DAYS:
        return f"not feasible at this traffic ({days:,.0f} {at})"
    return f"about {days:.1f} {at}"


def counted(n: int, noun: str) -> str:
    """A whole count and its noun, plural unless 1: ``1,204 users``, ``1 user``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def number(x: float | None) -> str:
    """A metric value in its own units, with about four significant digits."""
    if x is None:
        return NA
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:,.1f}"
    if abs(x) >= 1:
        return f"{x:.3f}"
    return f"{x:.4f}"


def terminal_number(x: float | None) -> str:
    """A metric value in the text report: as :func:`number`, but one decimal from
    100 up, however large (``12345.67`` → ``12,345.7``), so the column lines up."""
    if x is not None and abs(x) >= 100:
        return f"{x:,.1f}"
    return number(x)


def signed(x: float | None) -> str:
    """A difference in the metric's units with its sign: ``0.0123`` → ``+0.0123``,
    ``-0.0181`` → ``-0.0181`` (digits as :func:`number`)."""
    if x is None:
        return NA
    text = number(x)
    return "+" + text if x > 0 else text


def signed_interval(ci: Sequence[float] | None) -> str:
    """An interval of a difference: ``(-0.0458, 0.0097)`` → ``[-0.0458, +0.0097]``."""
    if ci is None:
        return NA
    return f"[{signed(ci[0])}, {signed(ci[1])}]"


def metric_value(x: float | None, as_percent: bool) -> str:
    """A metric value: a rate as a percentage (``5.06%``), anything else as a number."""
    if as_percent:
        return share(x, 2)
    return number(x)


def exact(x: float | int | None) -> str:
    """A sufficient statistic with twelve significant digits, for recomputing by hand."""
    if x is None:
        return NA
    if isinstance(x, int) or float(x).is_integer():
        return f"{int(x):,}"
    return format(x, ",.12g")


def fixed(x: float | None, digits: int = 1) -> str:
    """A plain number with ``digits`` decimals and thousands separators."""
    if x is None:
        return NA
    return f"{x:,.{digits}f}"


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp from the store; naive ones are UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def when(value: str | None) -> str:
    """``2025-03-16T23:40:28.952`` → ``2025-03-16 23:40 UTC``; unparseable text as is."""
    parsed = parse_time(value)
    if parsed is None:
        return value or NA
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def short_day(value: str) -> str:
    """``2025-03-16`` → ``Mar 16`` (axis labels)."""
    try:
        day = datetime.strptime(value[:10], "%Y-%m-%d")
    except ValueError:
        return value
    return f"{day:%b} {day.day}"


def words(value: str) -> str:
    """``keep_running`` → ``Keep running``."""
    text = value.replace("_", " ")
    return text[:1].upper() + text[1:]


def convention(value: dict[str, Any]) -> str:
    """An offline metric's convention dict as ``k=10 · gain=binary``."""
    return " · ".join(f"{k}={v}" for k, v in value.items())


#: The Jinja filters of every HTML page, by name.
FILTERS: dict[str, Callable[..., str]] = {
    "pct": pct,
    "share": share,
    "interval": interval,
    "lift_interval": lift_interval,
    "pvalue": pvalue,
    "count": count,
    "number": number,
    "metric_value": metric_value,
    "exact": exact,
    "fixed": fixed,
    "when": when,
    "short_day": short_day,
    "words": words,
    "convention": convention,
}

#: The extra filters of the evaluation page: differences in a metric's own units
#: (the page's ``pct``/``interval`` are for relative lifts).
DIFFERENCE_FILTERS: dict[str, Callable[..., str]] = {
    "signed": signed,
    "signed_interval": signed_interval,
}
