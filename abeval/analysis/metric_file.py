"""A metrics file (docs/metrics.md#team-defined-metrics): TOML, one table per
metric, read with :mod:`tomllib` and checked whole before anything is recorded.
Every mistake is one :class:`~abeval.errors.InputError` line naming the file, the
line (of the metric's table, or of the key at fault) and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from abeval.analysis.online_metrics import BUILTIN_METRICS
from abeval.analysis.team_metrics import KINDS, NAME, NAME_TEXT, EventSum, Kind, TeamMetric
from abeval.errors import InputError, did_you_mean

#: The keys a metric's table may have.
KEYS: tuple[str, ...] = ("kind", "event", "value", "numerator", "denominator", "where")
KEYS += ("lower_is_better", "cap", "description")
_SIDE_KEYS = ("event", "value")
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


class _Located:
    """Line numbers of tables and keys in the file's text (tomllib gives none)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def table(self, name: str) -> int:
        pattern = re.compile(rf"^\s*\[\s*(\"?){re.escape(name)}\1\s*\]")
        for i, line in enumerate(self.lines, 1):
            if pattern.match(line):
                return i
        return 1

    def key(self, name: str, key: str) -> int:
        """The line of ``key`` inside the table ``name`` (the table's line if not found)."""
        start = self.table(name)
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*[=.]")
        for i in range(start, len(self.lines)):
            line = self.lines[i]
            if line.lstrip().startswith("["):
                break
            if pattern.match(line):
                return i + 1
        return start

    def error(self, line: int, message: str) -> InputError:
        return InputError(f"{self.path}:{line}: {message}")


def read_metric_file(path: Path) -> tuple[TeamMetric, ...]:
    """The metrics ``path`` defines, checked against the built-in names. An event
    type no ingested row has yet is no mistake (metrics may be set up before launch):
    :func:`unseen_events` says which, for a warning."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; give the path of a metrics file (TOML)") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text; save the metrics file as UTF-8") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, str(exc)) from None
    where = _Located(path, text)
    if not data:
        raise where.error(1, "no metric defined; add a table such as [add_to_cart_rate]")
    return tuple(_metric(where, name, body) for name, body in data.items())


def _syntax_error(path: Path, message: str) -> InputError:
    found = _TOML_POSITION.search(message)
    position = f"{found.group(1)}:{found.group(2)}:" if found else ""
    reason = _TOML_POSITION.sub("", message)
    reason = reason[:1].lower() + reason[1:]
    return InputError(
        f"{path}:{position} not valid TOML: {reason}; write each setting as key = value, "
        "text in double quotes, one [metric_name] table per metric"
    )


def _metric(where: _Located, name: str, body: Any) -> TeamMetric:
    line = where.table(name)
    if not isinstance(body, dict):
        raise where.error(
            line, f"{name} = ... is not a table; define each metric as a [{name}] table"
        )
    if name in BUILTIN_METRICS:
        raise where.error(line, f"[{name}] is a built-in metric; give the team metric another name")
    if not NAME.fullmatch(name):
        raise where.error(line, f"metric name {name!r} must be {NAME_TEXT}")
    for key in body:
        if key not in KEYS:
            hint = did_you_mean(key, KEYS)
            raise where.error(
                where.key(name, key),
                f"[{name}] has no setting {key!r}; {hint}settings: {', '.join(KEYS)}",
            )
    kind = body.get("kind")
    if kind is None:
        raise where.error(line, f'[{name}] needs kind = "proportion", "mean" or "ratio"')
    if kind not in KINDS:
        hint = did_you_mean(str(kind), KINDS)
        raise where.error(
            where.key(name, "kind"),
            f"[{name}] kind {kind!r} is not a kind of metric; {hint}"
            'write kind = "proportion", "mean" or "ratio"',
        )
    kind = cast(Kind, kind)
    where_pairs = _where(where, name, body.get("where", {}))
    numerator, denominator = _sides(where, name, kind, body)
    return TeamMetric(
        name=name,
        kind=kind,
        numerator=numerator,
        denominator=denominator,
        where=where_pairs,
        lower_is_better=_bool(where, name, body, "lower_is_better"),
        cap=_cap(where, name, kind, body.get("cap")),
        description=_text(where, name, body, "description"),
    )


def _sides(
    where: _Located, name: str, kind: Kind, body: Mapping[str, Any]
) -> tuple[EventSum, EventSum | None]:
    line = where.table(name)
    if kind == "ratio":
        for key in ("event", "value"):
            if key in body:
                raise where.error(
                    where.key(name, key),
                    f"[{name}] a ratio takes no {key}; give numerator = {{ event = ..., "
                    'value = "sum" }} and denominator = { event = ... }',
                )
        sides = []
        for side in ("numerator", "denominator"):
            given = body.get(side)
            if not isinstance(given, dict):
                raise where.error(
                    where.key(name, side) if side in body else line,
                    f'[{name}] a ratio needs {side} = {{ event = "EVENT_TYPE" }} '
                    '(add value = "sum" to sum the events\' value)',
                )
            sides.append(_event_sum(where, name, given, side))
        return sides[0], sides[1]
    for key in ("numerator", "denominator"):
        if key in body:
            raise where.error(
                where.key(name, key),
                f'[{name}] only a ratio takes {key}; a {kind} takes event = "EVENT_TYPE"',
            )
    if "event" not in body:
        raise where.error(line, f'[{name}] needs event = "EVENT_TYPE" (kind "{kind}")')
    if kind == "proportion" and "value" in body:
        raise where.error(
            where.key(name, "value"),
            f"[{name}] a proportion counts users with an event and takes no value; "
            'use kind = "mean" with value = "sum" for the sum of values',
        )
    return _event_sum(where, name, body, None), None


def _event_sum(where: _Located, name: str, given: Mapping[str, Any], side: str | None) -> EventSum:
    label = f"{side}'s " if side else ""
    at = where.key(name, side or "event")
    for key in given:
        if side and key not in _SIDE_KEYS:
            raise where.error(
                at, f"[{name}] {side} has no setting {key!r}; it takes event and value"
            )
    event = given.get("event")
    if not isinstance(event, str) or not event:
        raise where.error(at, f'[{name}] needs {label}event = "EVENT_TYPE"')
    value = given.get("value")
    if value not in (None, "sum"):
        raise where.error(
            at if side else where.key(name, "value"),
            f'[{name}] {label}value must be "sum" (the sum of the events\' value) or left out '
            f"(a count of events), got {value!r}",
        )
    return EventSum(event, value == "sum")


def _where(where: _Located, name: str, given: Any) -> tuple[tuple[str, str], ...]:
    at = where.key(name, "where")
    if not isinstance(given, dict):
        raise where.error(
            at, f'[{name}] where must be a table of attributes, such as {{ device = "mobile" }}'
        )
    out = []
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise where.error(
                at,
                f"[{name}] where {key} must be text (or a whole number), as the attribute "
                f"is in the events; got {value!r}",
            )
        out.append((str(key), str(value)))
    return tuple(sorted(out))


def _bool(where: _Located, name: str, body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise where.error(where.key(name, key), f"[{name}] {key} must be true or false")
    return value


def _text(where: _Located, name: str, body: Mapping[str, Any], key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise where.error(where.key(name, key), f"[{name}] {key} must be text in double quotes")
    return value


def _cap(where: _Located, name: str, kind: Kind, value: Any) -> float | None:
    if value is None:
        return None
    at = where.key(name, "cap")
    if kind == "proportion":
        raise where.error(at, f"[{name}] a proportion takes no cap (each user counts 0 or 1)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise where.error(
            at,
            f"[{name}] cap is the quantile the per-user value is capped at, between 0 and 1 "
            f"(such as 0.99); got {value!r}",
        )
    return float(value)


def unseen_events(metrics: Sequence[TeamMetric], event_types: Sequence[str]) -> tuple[str, ...]:
    """One warning line per metric event type that no ingested row has yet (the
    store's ``event_types``), with a did-you-mean when it is close to one that has."""
    known = sorted(set(event_types))
    lines = []
    for m in metrics:
        for event in m.events():
            if event not in known:
                hint = did_you_mean(event, known).strip()
                lines.append(
                    f"[{m.name}] no ingested row has event type {event!r} yet; the metric "
                    "will count them once they arrive" + (f" ({hint})" if hint else "")
                )
    return tuple(lines)
