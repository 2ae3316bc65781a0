"""The checks every API call's options go through, and the parsers the CLI calls.

A check raises :class:`~abeval.errors.OptionError` naming the parameter, the
value and the values allowed; the parsers (``cutoffs``, ``metric_names``,
``parse_bound``) turn the CLI's texts into the API's values.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from abeval.errors import KeywordError, OptionError

F = TypeVar("F", bound=Callable[..., Any])
Names = str | Sequence[str] | None


def keywords_checked(fn: F) -> F:
    """``fn`` refusing an unknown keyword argument with a
    :class:`~abeval.errors.KeywordError` (an OptionError and a TypeError) that
    names it and the closest keyword ``fn`` takes. A function that takes
    ``**options`` is checked against the keywords of the function it passes them
    to (:func:`forwards`), else left as it is. Every public function of the API
    and every method of a store goes through this (the methods by
    :class:`~abeval.api.opened.Opened`)."""
    params = inspect.signature(fn).parameters.values()
    target: str | None = getattr(fn, "__forwards__", None)
    if any(p.kind is p.VAR_KEYWORD for p in params) and target is None:
        return fn
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    own = tuple(p.name for p in params if p.kind in kinds and p.name not in ("self", "cls"))
    name = fn.__name__

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for keyword in kwargs:
            if keyword not in own:
                further = _keywords(target) if target else ()
                if further is None:  # passed on to a function that takes any keyword
                    break
                if keyword not in own + further:
                    raise KeywordError(keyword, name, own + further)
        return fn(*args, **kwargs)

    return checked  # type: ignore[return-value]


def forwards(target: str) -> Callable[[F], F]:
    """Mark a function whose ``**options`` go to ``target`` (``"module:function"``,
    imported only when a keyword needs checking): :func:`keywords_checked` then
    takes that function's keywords too."""

    def mark(fn: F) -> F:
        fn.__forwards__ = target  # type: ignore[attr-defined]
        return fn

    return mark


def _keywords(target: str) -> tuple[str, ...] | None:
    """The keywords ``target`` takes, those it passes on included; None when it
    takes any (``**options`` passed nowhere known)."""
    import importlib

    module, _, name = target.partition(":")
    fn = inspect.unwrap(getattr(importlib.import_module(module), name))
    params = inspect.signature(fn).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    further = getattr(fn, "__forwards__", None)  # passed on again
    if further is None and any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    passed_on = _keywords(further) if further else ()
    if passed_on is None:
        return None
    return tuple(p.name for p in params if p.kind in kinds) + passed_on


def given(parameter: str, ok: bool, reason: str, mentions: Sequence[str] = ()) -> None:
    """An :class:`OptionError` naming ``parameter`` (no value) unless ``ok``; a
    ``reason`` naming other parameters writes each as ``{name}`` (``mentions``)."""
    if not ok:
        raise OptionError(parameter, None, reason, mentions=mentions)


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


def lift(parameter: str, value: float) -> None:
    """A relative lift to plan for: above -1, below 1 (a share: 0.02 for +2%), not 0."""
    if value >= 1:
        reason = (
            f"did you mean {value / 100:g} ({value:g}%)? give the lift as a share (0.02 for +2%)"
        )
        raise OptionError(parameter, value, reason, allowed="-1 < value < 1, not 0")
    if not (-1 < value < 1 and value != 0):
        reason = "give a relative lift other than 0 and above -1 (0.02 for +2%)"
        raise OptionError(parameter, value, reason, allowed="-1 < value < 1, not 0")


def within(parameter: str, value: float, low: float, high: float, reason: str) -> None:
    """``low <= value <= high`` (NaN fails), else an OptionError with ``reason``."""
    if not low <= value <= high:
        raise OptionError(parameter, value, reason, allowed=f"{low:,} to {high:,}")


def finite(parameter: str, value: float, what: str = "a finite number") -> None:
    if not math.isfinite(value):
        raise OptionError(parameter, value, f"give {what}", allowed=what)


def at_least(parameter: str, value: int, least: int, reason: str = "") -> None:
    if not value >= least:
        reason = reason or f"must be {least} or more"
        raise OptionError(parameter, value, reason, allowed=f">= {least}")


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


def window(
    window_from: str | datetime | None, window_to: str | datetime | None
) -> tuple[datetime | None, datetime | None]:
    """An analysis window's bounds (``--from``/``--to``), each checked by
    :func:`bound`, the end after the start."""
    start = bound("window_from", window_from, end=False)
    end = bound("window_to", window_to, end=True)
    if start is not None and end is not None and not start < end:
        raise OptionError(
            "window_to", window_to, "must come after {window_from}", mentions=("window_from",)
        )
    return start, end


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


def named_files(
    parameter: str,
    texts: Sequence[str],
    *,
    what: str = "model name",
    form: str = "NAME=FILE",
    named: bool = False,
) -> dict[str, str]:
    """Repeated ``[NAME=]FILE`` texts (``-r``, ``--predictions``; with ``named``,
    ``NAME=FILE`` each, the file not yet checked: ``--target-propensities``) →
    name → file, split as docs/usage.md#named-models says; an
    :class:`OptionError` naming ``parameter`` for a text that cannot be, or a
    name given twice."""
    from abeval.files import model_argument, named_models

    try:
        if not named:
            return named_models(texts)
        files: dict[str, str] = {}
        for text in texts:
            name, path = model_argument(text, what=what, form=form, must_exist=False)
            if name is None:
                raise ValueError(f"give {form}, got {text!r}")
            if name in files:
                raise ValueError(f"{what} {name!r} is given twice")
            files[name] = path
        return files
    except ValueError as exc:
        raise OptionError(parameter, None, str(exc)) from None


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

    try:
        return parse(value, end=end)
    except ValueError as exc:
        raise ValueError(f"{value!r}: {exc}") from None
