"""A program's history from a file (``abeval program --history FILE``, CSV or
Parquet) or a table in memory: one row per experiment and metric.

Columns: ``experiment``, ``metric``, ``lift`` (relative), ``se`` (both finite
and within ±1000, a relative lift of ±100,000%, as the forecast's); optional
``status`` (running, shipped, rolled_back, abandoned), ``date`` and ``tag``
(several separated by ``;``). Every row is checked; a bad one stops the read
with one line naming the file, the line (the row of a Parquet file or a table)
and the column, and the fix (docs/usage.md#a-program-of-experiments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from abeval.analysis.history_file import read_rows
from abeval.errors import InputError
from abeval.stats.forecast import MAX_LIFT

REQUIRED = ("experiment", "metric", "lift", "se")
OPTIONAL = ("status", "date", "tag")
STATUSES = ("running", "shipped", "rolled_back", "abandoned")


@dataclass(frozen=True)
class ProgramEntry:
    """One row of a program's history."""

    experiment: str
    metric: str
    lift: float
    se: float
    status: str | None
    date: str
    tags: tuple[str, ...]


def read_program(data: Any) -> tuple[str, list[ProgramEntry]]:
    """The name shown for ``data`` (a CSV or Parquet path, a pandas DataFrame or a
    pyarrow Table) and its checked rows (module docstring)."""
    rows = read_rows(data, REQUIRED, OPTIONAL, one_row_per="experiment and metric")
    name, records, is_csv = rows.name, rows.records, rows.is_csv
    entries: list[ProgramEntry] = []
    seen: dict[tuple[str, str], str] = {}
    statuses: dict[str, tuple[str | None, str]] = {}
    for i, record in enumerate(records):
        where = f"{name}: line {i + 2}" if is_csv else f"{name}: row {i + 1}"
        entry = _entry(where, record)
        key = (entry.experiment, entry.metric)
        if key in seen:
            raise InputError(
                f"{where}, column experiment: {entry.experiment!r} has a second {entry.metric} "
                f"row (first at {seen[key]}); keep one row per experiment and metric"
            )
        seen[key] = where.split(": ", 1)[1]
        first = statuses.setdefault(entry.experiment, (entry.status, seen[key]))
        if first[0] != entry.status:
            raise InputError(
                f"{where}, column status: {entry.experiment!r} is {entry.status or 'blank'} "
                f"here and {first[0] or 'blank'} at {first[1]}; give an experiment one status"
            )
        entries.append(entry)
    return name, entries


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _entry(where: str, record: dict[str, Any]) -> ProgramEntry:
    for column in ("experiment", "metric"):
        if _text(record.get(column)) == "":
            raise InputError(f"{where}, column {column}: empty; give every row its {column}")
    numbers: dict[str, float] = {}
    for column, fix in (
        ("lift", "give the experiment's relative lift, e.g. 0.012 for +1.2%"),
        ("se", "give the lift's standard error, above 0"),
    ):
        raw = _text(record.get(column))
        if raw == "":
            raise InputError(f"{where}, column {column}: empty; {fix}")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(f"{where}, column {column}: {raw!r} is not a number; {fix}")
        if abs(value) > MAX_LIFT:  # the posterior's squares would overflow a float
            raise InputError(
                f"{where}, column {column}: {value:g} is beyond ±{MAX_LIFT:g} "
                f"(a relative lift of ±100,000%); {fix}"
            )
        numbers[column] = value
    if numbers["se"] <= 0:
        raise InputError(
            f"{where}, column se: {numbers['se']:g} is not above 0; "
            "give the lift's standard error, above 0"
        )
    status = _text(record.get("status")).lower() or None
    if status is not None and status not in STATUSES:
        raise InputError(
            f"{where}, column status: {status!r} is not a status; give one of "
            f"{', '.join(STATUSES)}, or leave it empty"
        )
    tags = tuple(dict.fromkeys(t.strip() for t in _text(record.get("tag")).split(";") if t.strip()))
    return ProgramEntry(
        experiment=_text(record.get("experiment")),
        metric=_text(record.get("metric")),
        lift=numbers["lift"],
        se=numbers["se"],
        status=status,
        date=_text(record.get("date")),
        tags=tags,
    )
