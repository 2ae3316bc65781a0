"""The one reader of history files: ``abeval forecast --history`` and ``abeval
agreement --history`` (:mod:`abeval.analysis.forecast_history`) and ``abeval
program --history`` (:mod:`abeval.analysis.program_history`). It reads a CSV or
Parquet file (or, for a program, a pandas DataFrame or pyarrow Table) into rows
of lower-cased column names, the named columns of a CSV as text, and refuses in
one line a file it cannot read, one without rows and one without a required
column. What each column must hold is its reader's rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abeval.errors import InputError


@dataclass(frozen=True)
class HistoryRows:
    """A history's rows: the name its errors give (the path, or ``history`` for a
    table in memory), each row's values by column, and whether it is a CSV (its
    data rows start at line 2)."""

    name: str
    records: tuple[dict[str, Any], ...]
    is_csv: bool


def read_rows(
    data: Any, required: Sequence[str], optional: Sequence[str], *, one_row_per: str
) -> HistoryRows:
    """The rows of ``data`` (a CSV or Parquet path, or a table in memory), with at
    least one row and every ``required`` column; ``one_row_per`` says in the error
    of an empty history what a row is (``past experiment``)."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        name, is_csv = str(path), path.suffix.lower() not in (".parquet", ".pq")
        records = file_records(path, (*required, *optional))
    else:
        name, records, is_csv = "history", _frame_records(data), False
    if not records:
        raise InputError(f"{name}: the history has no rows; give one row per {one_row_per}")
    missing = [c for c in required if c not in records[0]]
    if missing:
        raise InputError(
            f"{name}: no column {', '.join(missing)}; a history needs the columns "
            f"{', '.join(required)} (optional: {', '.join(optional)})"
        )
    return HistoryRows(name, tuple(records), is_csv)


def file_records(path: Path, text_columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of a CSV or Parquet file, ``text_columns`` read as text."""
    import pyarrow as pa

    if not path.is_file():
        raise InputError(
            f"{path}: no such file; give {{history}} a CSV or Parquet file",
            parameters=("history",),
        )
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            from pyarrow import csv

            text = {c: pa.string() for c in text_columns}
            table = csv.read_csv(path, convert_options=csv.ConvertOptions(column_types=text))
    except (pa.ArrowInvalid, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"{path}: not a readable CSV or Parquet file ({first}); "
            "give {history} a CSV with a header line, or a Parquet file",
            parameters=("history",),
        ) from None
    columns = [c.strip().lower() for c in table.column_names]
    return [dict(zip(columns, values, strict=True)) for values in zip(
        *(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True
    )]  # fmt: skip


def _frame_records(data: Any) -> list[dict[str, Any]]:
    from abeval.analysis.evaluate.reader import Frame, source

    given = source("history", data)
    table: Any = given.data if isinstance(given, Frame) else given
    frame = table.to_pandas() if hasattr(table, "to_pandas") else table
    rows = frame.to_dict("records")
    return [{str(k).strip().lower(): v for k, v in row.items()} for row in rows]
