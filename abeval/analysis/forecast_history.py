"""A history of past experiments from a file (``--history FILE``, CSV or Parquet),
for teams whose past results live in another platform
(docs/usage.md#forecast-the-online-lift).

Columns: ``experiment``, ``signal``, ``offline_lift``, ``offline_se``,
``online_lift``, ``online_se``; optional ``metric`` (the online metric, default
``ctr``), ``arm``, ``date`` and ``users`` (the users of the test's control and
arm together: lets the forecast say how many users a test needs). Every row is
checked; a bad one stops the read with one line naming the file, the row and
the fix. Nothing is dropped silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abeval.analysis.history_file import read_rows
from abeval.errors import InputError
from abeval.stats.forecast import out_of_bounds

REQUIRED = ("experiment", "signal", "offline_lift", "offline_se", "online_lift", "online_se")
OPTIONAL = ("metric", "arm", "date", "users")
DEFAULT_METRIC = "ctr"

_FIX = {
    "offline_lift": "give the signal's relative lift of the tested arm over control",
    "offline_se": "give the offline lift's standard error (0 when it has no noise)",
    "online_lift": "give the test's relative lift of the arm over control",
    "online_se": "give the online lift's standard error (above 0)",
    "users": "give the users of the test's control and arm together, or leave it empty",
}


@dataclass(frozen=True)
class HistoryEntry:
    """One row of a history file (``row`` counts data rows from 1)."""

    row: int
    experiment: str
    signal: str
    metric: str
    arm: str
    date: str
    offline_lift: float
    offline_se: float
    online_lift: float
    online_se: float
    users: float | None


def read_history(path: str | Path) -> list[HistoryEntry]:
    """Every row of the history file ``path``, checked (module docstring)."""
    path = Path(path)
    rows = read_rows(path, REQUIRED, OPTIONAL, one_row_per="past experiment")
    return [_entry(path, i + 1, r) for i, r in enumerate(rows.records)]


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _number(path: Path, row: int, record: dict[str, Any], column: str) -> float | None:
    raw = _text(record.get(column))
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"{path}: row {row}: {column} is {raw!r}, not a number; {_FIX[column]}")
    return value


def _entry(path: Path, row: int, record: dict[str, Any]) -> HistoryEntry:
    for column in ("experiment", "signal"):
        if _text(record.get(column)) == "":
            raise InputError(f"{path}: row {row}: no {column}; give every row its {column}")
    values: dict[str, float] = {}
    for column in ("offline_lift", "offline_se", "online_lift", "online_se"):
        value = _number(path, row, record, column)
        if value is None:
            raise InputError(f"{path}: row {row}: no {column}; {_FIX[column]}")
        values[column] = value
    if values["offline_se"] < 0:
        raise InputError(f"{path}: row {row}: offline_se is negative; {_FIX['offline_se']}")
    if values["online_se"] <= 0:
        raise InputError(f"{path}: row {row}: online_se is not above 0; {_FIX['online_se']}")
    for column, value in values.items():
        wrong = out_of_bounds(column, value)
        if wrong is not None:
            raise InputError(f"{path}: row {row}: {wrong}; {_FIX[column]}")
    users = _number(path, row, record, "users") if "users" in record else None
    if users is not None and users <= 0:
        raise InputError(f"{path}: row {row}: users is not above 0; {_FIX['users']}")
    return HistoryEntry(
        row=row,
        experiment=_text(record.get("experiment")),
        signal=_text(record.get("signal")),
        metric=_text(record.get("metric")) or DEFAULT_METRIC,
        arm=_text(record.get("arm")),
        date=_text(record.get("date")),
        users=users,
        **values,
    )
