"""The checks every API call's options go through, and the parsers the CLI calls.

A check raises :class:`~abeval.errors.OptionError` naming the parameter, the
value and the values allowed; the parsers (``cutoffs``, ``metric_names``,
``parse_bound``) turn the CLI's texts into the API's values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from abeval.errors import OptionError

Names = str | Sequence[str] | None


def given(parameter: str, ok: bool, reason: str) -> None:
    """An :class:`OptionError` naming ``parameter`` (no value) unless ``ok``."""
    if not ok:
        raise OptionError(parameter, None, reason)


def choice(parameter: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise OptionError(parameter, value, f"choose from {', '.join(allowed)}", allowed=allowed)


def share(parameter: str, value: float) -> None:
    if not 0 < value < 1:
        raise OptionError(
            parameter, value, "must be between 0 and 1 (exclusive)", allowed="0 < value < 1"
        )


def positive(parameter: str, value: float) -> None:
    if not 0 < value < math.inf:
        raise OptionError(parameter, value, "must be a number above 0", allowed="a number above 0")


def at_least(parameter: str, value: int, least: int) -> None:
    if not value >= least:
        raise OptionError(parameter, value, f"must be {least} or more", allowed=f">= {least}")


def bound(parameter: str, value: str | datetime | None, *, end: bool) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):  # the store's timestamps are naive UTC
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    from abeval.store.sql.population import parse_bound

    try:
        return parse_bound(value, end=end)
    except ValueError as exc:
        raise OptionError(parameter, value, str(exc)) from None


def names(experiments: str | Sequence[str]) -> tuple[str, ...]:
    """Experiment names, each whole: a string is one name (commas included)."""
    return (experiments,) if isinstance(experiments, str) else tuple(experiments)


def cutoffs(k: str | Iterable[int], parameter: str = "k") -> tuple[int, ...]:
    """``"5,10"`` or ``[5, 10]`` → sorted cutoffs; an :class:`OptionError` unless
    each is a whole number of at least 1.

    >>> abeval.api.cutoffs("10,5")
    (5, 10)
    """
    from abeval.metrics.base import parse_cutoffs

    text = k if isinstance(k, str) else ",".join(str(x) for x in k)
    try:
        return parse_cutoffs(text)
    except ValueError as exc:
        raise OptionError(parameter, k, str(exc)) from None


def metric_names(
    text: Names, parameter: str = "primary", *, default: bool = True
) -> tuple[str, ...]:
    """``"ctr,conversion"`` (or a list) → the online metrics' names, checked (an
    :class:`OptionError` naming ``parameter`` for a misspelt one; a lower-case name
    not known yet is kept, as it may be a team-defined metric of a store). None
    gives the default primary metrics (ctr, conversion), or none unless ``default``.

    >>> abeval.api.metric_names("ctr,conversion", "primary")
    ('ctr', 'conversion')
    """
    from abeval.analysis.online_metrics import DEFAULT_PRIMARY, parse_online_metrics

    return parse_online_metrics(text, DEFAULT_PRIMARY if default else (), parameter)


def parse_bound(value: str, *, end: bool) -> datetime:
    """An instant as ``--from``/``--to`` take it (ISO 8601, UTC unless it has a
    zone; a date as ``end``: through that day) → a naive UTC datetime; ValueError
    when it is none.

    >>> abeval.api.parse_bound("2026-03-01", end=True)
    datetime.datetime(2026, 3, 2, 0, 0)
    """
    from abeval.store.sql.population import parse_bound as parse

    return parse(value, end=end)
