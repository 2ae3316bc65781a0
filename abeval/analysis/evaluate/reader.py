"""Reading one input file of ``abeval evaluate`` into a table, with one-line errors.

DuckDB reads every file itself (``read_csv``, ``read_parquet``, ``read_json``);
:class:`Reader` picks the columns a :class:`FileColumn` list asks for, casts them
(text, numbers, feature vectors) and stops at the first problem with a message
that names the file, the line (or row) and the column, and says what to do: a
missing file, an unknown or empty file, a missing column, a value that is not a
number, a missing value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from abeval.analysis.evaluate.sql import first_line
from abeval.analysis.evaluate.trec import load_trec, trec_format
from abeval.errors import InputError
from abeval.files import format_of, wide_text_error
from abeval.store.quoting import quote_ident, quote_literal

if TYPE_CHECKING:
    import duckdb

_NUMERIC = re.compile(
    r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|"
    r"FLOAT|REAL|DOUBLE|DECIMAL.*|INT.*)$",
    re.I,
)


@dataclass(frozen=True)
class FileColumn:
    """A column a file must (or may) have."""

    name: str  # the abeval name
    candidates: tuple[str, ...]  # accepted file column names, first found wins
    kind: str  # text | number | features
    required: bool = True


#: A column found in a file: (its name in the file, its DuckDB type).
_Found = tuple[str, str]


@dataclass(frozen=True, eq=False)
class Frame:
    """A table in memory given where a file could be (a pandas DataFrame or a
    pyarrow Table), and the argument that gave it (``truth``, ``runs['control']``).
    :class:`Reader` registers it with DuckDB and reads it as it reads a Parquet file,
    with the same checks; its messages name ``name`` where a file's name the path,
    and ``name:row N`` (rows counted from 1) where a file's name the line."""

    name: str
    data: Any

    def __str__(self) -> str:
        return self.name

    def sha256(self) -> str:
        """The SHA-256 of the table as an Arrow IPC stream: what a recorded
        evaluation keeps as this input's fingerprint, where a file's bytes are hashed."""
        import hashlib

        import pyarrow as pa

        data = self.data
        table = data if isinstance(data, pa.Table) else pa.Table.from_pandas(data)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


#: Where an input comes from: a file's path, or a table in memory.
Source = str | Path | Frame

_FRAME_TYPES = (("pandas", "DataFrame"), ("pyarrow", "Table"))


#: The command that decompresses a file of each codec evaluate does not read.
_TOOLS = {"bzip2": "bzip2", "xz": "xz"}


def source(name: str, data: Any) -> Source:
    """``data`` as a reader's input: a path stays one; a pandas DataFrame or a pyarrow
    Table becomes a :class:`Frame` named ``name``; anything else is an InputError
    (pandas and pyarrow are not imported here: a frame brings its own)."""
    if isinstance(data, str | Path | Frame):
        return data
    for cls in type(data).__mro__:
        if (cls.__module__.split(".")[0], cls.__name__) in _FRAME_TYPES:
            return Frame(name, data)
    raise InputError(
        f"{name}: expected a file path, a pandas DataFrame or a pyarrow Table, "
        f"got {type(data).__name__}"
    )


def _format(path: Path) -> str:
    """The DuckDB reader a file's name asks for: csv, parquet or json (JSON Lines)."""
    fmt = "trec" if trec_format(path) is not None else format_of(path)
    if fmt is None:
        raise InputError(
            f"{path}: unknown file type; "
            "name it .csv, .csv.gz, .parquet or .jsonl to say its format "
            "(.qrels or .run for TREC files)"
        )
    return "json" if fmt == "jsonl" else fmt


def _reader(fmt: str, typed: bool = False) -> str:
    if fmt.startswith("frame:"):
        return _FRAME_VIEW.format(table=fmt.removeprefix("frame:"))
    if fmt == "parquet":
        return "read_parquet(?)"
    if fmt == "json":
        return "read_json(?, format = 'auto')"
    return "read_csv(?, header = true, types = ?)" if typed else "read_csv(?, header = true)"


#: The name a :class:`Frame` read into ``table`` is registered under (its format
#: is ``frame:TABLE``).
_FRAME_VIEW = "abeval_frame_{table}"


def _params(path: Path, fmt: str, types: Mapping[str, str] | None = None) -> list[Any]:
    if fmt.startswith("frame:"):
        return []
    return [str(path), dict(types or {})] if fmt == "csv" and types is not None else [str(path)]


def _where(path: Path, fmt: str, row: int) -> str:
    """``FILE:LINE`` for CSV (header = line 1) and JSONL, ``FILE:row N`` for Parquet."""
    if fmt == "csv":
        return f"{path}:{row + 1}"
    if fmt == "json":
        return f"{path}:{row}"
    return f"{path}:row {row}"  # Parquet, and a frame


class Reader:
    """Loads input files into tables of an in-memory DuckDB, with one-line errors."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def load(
        self,
        path_text: Source,
        table: str,
        role: str,
        columns: Sequence[FileColumn],
        expected: str,
    ) -> dict[str, str]:
        """Create ``table`` from the file (or the :class:`Frame`); returns abeval
        name → file column for the columns found. Raises InputError for a missing
        file, an empty file, missing columns, a non-numeric number, or a missing value."""
        if isinstance(path_text, Frame):
            # Registered for the connection's life (an in-memory one, per evaluation):
            # the frame is copied into ``table``; its name stands where a path would.
            # DuckDB refuses to register while a result is unfinished: finish it.
            self.con.execute("SELECT 1").fetchall()
            self.con.register(_FRAME_VIEW.format(table=table), path_text.data)
            return self._load(cast(Path, path_text), f"frame:{table}", table, columns, expected)
        path = Path(path_text)
        fmt = _open(path, role, expected)
        from abeval.store.ingest.compressed import ENGINE_CODECS, check_compressed, codec_of

        if (codec := codec_of(path)) is not None:
            if codec not in ENGINE_CODECS:
                raise InputError(
                    f"{path}: {codec}-compressed; `abeval evaluate` reads plain, gzip or "
                    f"zstd files: decompress it first (`{_TOOLS[codec]} -dk {path}`)",
                    file=str(path),
                )
            # DuckDB reads a cut .zst up to the cut and says nothing: the ingest's check
            check_compressed(path, path, skip=False)
        if (trec := trec_format(path)) is not None:
            return load_trec(self.con, path, trec, table, role)
        return self._load(path, fmt, table, columns, expected)

    def _load(
        self, path: Path, fmt: str, table: str, columns: Sequence[FileColumn], expected: str
    ) -> dict[str, str]:
        found = self.describe(path, fmt)
        chosen = _choose(path, found, columns, expected)
        numeric = {
            c.name: chosen[c.name][0] for c in columns if c.kind == "number" and c.name in chosen
        }
        if fmt != "csv":
            self._check_typed_numbers(path, fmt, chosen, numeric)
        self._create(path, fmt, table, _select(columns, chosen, fmt), found, numeric)
        self._check_present(path, fmt, table, columns, chosen, expected)
        return {name: file_col for name, (file_col, _) in chosen.items()}

    def describe(self, path: Path, fmt: str) -> list[_Found]:
        try:
            rows = self.con.execute(
                f"DESCRIBE SELECT * FROM {_reader(fmt)}", _params(path, fmt)
            ).fetchall()
        except Exception as exc:
            too_long = _too_long(path, fmt)
            if too_long is not None:
                raise too_long from None
            raise InputError(f"{path}: cannot read the file as {fmt}: {first_line(exc)}") from None
        return [(str(r[0]), str(r[1])) for r in rows]

    def locate(self, path: Path, fmt: str, column: str, condition: str) -> tuple[int, Any] | None:
        """The first row (1-based) where ``condition`` over ``v`` (the column) holds."""
        self.con.execute("SET preserve_insertion_order = true")
        try:
            reader = _reader(fmt)
            params = _params(path, fmt)
            if fmt == "csv":
                reader = "read_csv(?, header = true, all_varchar = true)"
            row = self.con.execute(
                f"SELECT rn, v FROM (SELECT ROW_NUMBER() OVER () AS rn, "
                f"{_text(quote_ident(column))} AS v FROM {reader}) x "
                f"WHERE {condition} ORDER BY rn LIMIT 1",
                params,
            ).fetchone()
        finally:
            self.con.execute("SET preserve_insertion_order = false")
        return None if row is None else (int(row[0]), row[1])

    def csv_reject(self, path: Path, types: Mapping[str, str]) -> tuple[int, str, str] | None:
        """Line, column and raw line of the first CSV value that does not convert."""
        self.con.execute("DROP TABLE IF EXISTS abeval_reject_probe")
        self.con.execute(
            "CREATE TEMP TABLE abeval_reject_probe AS SELECT * FROM "
            "read_csv(?, header = true, types = ?, store_rejects = true)",
            [str(path), dict(types)],
        )
        row = self.con.execute(
            "SELECT line, column_name, csv_line FROM reject_errors ORDER BY line LIMIT 1"
        ).fetchone()
        self.con.execute("DROP TABLE IF EXISTS abeval_reject_probe")
        return None if row is None else (int(row[0]), str(row[1]), str(row[2]))

    def _check_typed_numbers(
        self, path: Path, fmt: str, chosen: Mapping[str, _Found], numeric: Mapping[str, str]
    ) -> None:
        """Parquet and JSON number columns of a text type: the first value that is
        not a number, found before the table is created."""
        for name, file_col in numeric.items():
            if _NUMERIC.match(chosen[name][1]):
                continue
            bad = self.locate(
                path, fmt, file_col, "v IS NOT NULL AND TRY_CAST(v AS DOUBLE) IS NULL"
            )
            if bad is not None:
                raise _not_a_number(path, fmt, bad[0], file_col, bad[1])

    def _create(
        self,
        path: Path,
        fmt: str,
        table: str,
        select: Sequence[str],
        found: Sequence[_Found],
        numeric: Mapping[str, str],
    ) -> None:
        """``table`` from the file; a CSV number that does not convert is named by line."""
        types = {file_col: "DOUBLE" for file_col in numeric.values()}
        typed = fmt == "csv" and bool(types)
        try:
            if fmt == "parquet":  # (a frame is copied: it is unregistered once read)
                # Parquet is columnar and cheap to scan again: a view, not a copy.
                self.con.execute(
                    f"CREATE VIEW {table} AS SELECT {', '.join(select)} "
                    f"FROM read_parquet({quote_literal(str(path))})"
                )
            else:
                self.con.execute(
                    f"CREATE TABLE {table} AS SELECT {', '.join(select)} "
                    f"FROM {_reader(fmt, typed)}",
                    _params(path, fmt, types if typed else None),
                )
        except Exception as exc:
            if typed:
                reject = self.csv_reject(path, types)
                if reject is not None:
                    line, column, raw = reject
                    value = _field(raw, column, found)
                    raise _not_a_number(path, "line", line, column, value) from None
            too_long = _too_long(path, fmt)
            if too_long is not None:
                raise too_long from None
            raise InputError(f"{path}: cannot read the file: {first_line(exc)}") from None

    def _check_present(
        self,
        path: Path,
        fmt: str,
        table: str,
        columns: Sequence[FileColumn],
        chosen: Mapping[str, _Found],
        expected: str,
    ) -> None:
        """The table has rows, and no missing value in a column other than features."""
        checked = [c for c in columns if c.name in chosen and c.kind != "features"]
        counts = self.con.execute(
            f"SELECT COUNT(*){''.join(f', COUNT({c.name})' for c in checked)} FROM {table}"
        ).fetchone()
        assert counts is not None
        rows = int(counts[0])
        if rows == 0:
            what = "frame" if fmt.startswith("frame:") else "file"
            raise InputError(f"{path}: the {what} has no rows; expected {expected}")
        for col, present in zip(checked, counts[1:], strict=True):
            nulls = rows - int(present)
            if nulls:
                file_col = chosen[col.name][0]
                bad = self.locate(path, fmt, file_col, "v IS NULL")
                where = _where(path, fmt, bad[0]) if bad else str(path)
                raise InputError(
                    f"{where}:{file_col}: the value is missing ({nulls} rows without one); "
                    "fill it in or remove the rows"
                )


def _open(path: Path, role: str, expected: str) -> str:
    """The reader format of an existing, non-empty file (else an InputError)."""
    if not path.exists():
        raise InputError(f"{path}: no such {role} file; check the path")
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give the {role} file")
    fmt = _format(path)
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty; expected {expected}")
    if fmt != "parquet" and (wide := wide_text_error(path)):
        raise InputError(wide, file=str(path))
    return fmt


def _choose(
    path: Path, found: Sequence[_Found], columns: Sequence[FileColumn], expected: str
) -> dict[str, _Found]:
    """abeval name → the file column (first candidate found, any case) and its type."""
    by_lower = {name.lower(): (name, typ) for name, typ in found}
    chosen: dict[str, _Found] = {}
    for col in columns:
        for cand in col.candidates:
            if cand in by_lower:
                chosen[col.name] = by_lower[cand]
                break
    missing = [c for c in columns if c.required and c.name not in chosen]
    if missing:
        names = " or ".join(missing[0].candidates)
        have = ", ".join(name for name, _ in found) or "none"
        raise InputError(
            f"{path}: missing column {names}; expected {expected} (found: {have}); "
            "rename the columns in the header"
        )
    return chosen


def _select(columns: Sequence[FileColumn], chosen: Mapping[str, _Found], fmt: str) -> list[str]:
    """The SELECT list that casts each chosen column to its kind under its abeval name."""
    select: list[str] = []
    for col in columns:
        if col.name not in chosen:
            continue
        src, typ = quote_ident(chosen[col.name][0]), chosen[col.name][1]
        if col.kind == "number":
            value = src if fmt == "csv" or _NUMERIC.match(typ) else _text(src)
            select.append(f"CAST({value} AS DOUBLE) AS {col.name}")
        elif col.kind == "features":
            select.append(f"{_features_sql(src, typ)} AS {col.name}")
        else:
            select.append(f"CAST({src} AS VARCHAR) AS {col.name}")
    return select


def _text(src: str) -> str:
    """A value as text; a JSON string loses its quotes (``"4.5"`` → ``4.5``)."""
    return f"TRIM(CAST({src} AS VARCHAR), '\"')"


def _features_sql(src: str, typ: str) -> str:
    if typ.endswith("[]"):
        return f"CAST({src} AS DOUBLE[])"
    # A JSON array in text, such as "[0.1, 0.2]".
    return f"CAST(CAST({src} AS VARCHAR) AS DOUBLE[])"


def _field(raw: str, column: str, found: Sequence[_Found]) -> str:
    names = [n for n, _ in found]
    parts = raw.split(",")
    if column in names and len(parts) == len(names):
        return parts[names.index(column)]
    return raw


#: The longest line DuckDB's readers take as they are called here (their defaults).
_LONGEST = {"csv": 2_097_152, "json": 16_777_216}


def _too_long(path: Path, fmt: str) -> InputError | None:
    """After a failed read: the first line longer than the reader takes, named by
    its line number (DuckDB's own message names the line its sniffer stopped at)."""
    from abeval.store.ingest.lines import can_read, long_lines

    limit = _LONGEST.get(fmt)
    if limit is None or not can_read(path):
        return None
    try:
        found = long_lines(path, limit)
    except (OSError, EOFError):
        return None
    if not found:
        return None
    line, size = found[0]
    return InputError(
        f"{path}:{line}: the line is {size:,} bytes, more than the {limit:,} bytes a line "
        "abeval evaluate reads; shorten it or remove it"
    )


def _not_a_number(path: Path, fmt: str, row: int, column: str, value: Any) -> InputError:
    where = f"{path}:{row}" if fmt == "line" else _where(path, fmt, row)
    return InputError(
        f"{where}:{column}: {str(value)!r} is not a number; "
        f"write a number in column {column} or remove the row"
    )
