"""Opening an event file: its format, its columns (CSV header, JSON keys,
Parquet schema) checked against the event format, and the DuckDB table
functions that read its rows and its raw lines."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from abeval.choices import FileFormat as Format
from abeval.errors import InputError, OptionError, close_matches
from abeval.files import FORMATS, split_name, wide_text_error
from abeval.store.events_format import COLUMN_ALIASES, KNOWN, REQUIRED, extras
from abeval.store.ingest import lines
from abeval.store.quoting import quote_literal

JSON_SAMPLE_LINES = 20_480
# A delimiter no event file contains, to read a file as one text column per line.
_LINE_DELIM = "chr(28) || chr(29) || chr(30) || chr(31)"
# The text reader of raw lines takes lines of any length (rows over the limit
# are the row reader's to refuse, and are shown from here).
_ANY_LINE = 1 << 30
#: The JSON reader's default ``maximum_object_size``.
_JSON_OBJECT = 1 << 24
NOT_UTF8 = "not valid UTF-8; save the file as UTF-8"


def detect_format(path: Path, fmt: str | None) -> Format:
    """The format ``--input-format`` names or, without it, the one the file's name says."""
    if fmt:
        if fmt not in FORMATS:
            raise OptionError(
                "input_format", fmt, "choose one of csv, parquet, jsonl", allowed=FORMATS
            )
        return cast(Format, fmt)
    found = split_name(path)[1]
    if found in ("qrels", "run"):
        raise InputError(
            f"{path}: a TREC {found} file is read by `abeval evaluate`, not loaded as events"
        )
    if found is None:
        raise InputError(
            f"{path}: cannot tell the format from the extension; "
            "name it .csv, .csv.gz, .parquet or .jsonl, or pass {input_format}",
            parameters=("input_format",),
        )
    return cast(Format, found)


def check_file(path: Path, fmt: str | None, shown: str | None = None) -> Format:
    """Refuse a path that is not a non-empty file; return the file's format.
    ``shown`` names the file in messages when ``path`` does not (standard input)."""
    shown = shown or str(path)
    if path.is_dir():
        raise InputError(f"{shown}: is a directory; name the event files in it")
    if not path.is_file():
        raise InputError(f"{shown}: no such file; check the path")
    kind = detect_format(path, fmt)
    if path.stat().st_size == 0:
        raise InputError(_empty_file_message(shown, kind))
    if kind != "parquet" and (wide := wide_text_error(path, shown)):
        raise InputError(wide, file=shown)
    return kind


def _empty_file_message(shown: str, fmt: Format) -> str:
    expected = {
        "csv": f"expected a header line with {', '.join(REQUIRED)}",
        "jsonl": "expected JSON Lines, one event object per line",
        "parquet": "expected a Parquet file",
    }[fmt]
    return f"{shown}: the file is empty (0 bytes); {expected}"


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (DuckDB's run on for several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class Source:
    """One input file: its format, the columns found in it and how to read it."""

    path: Path  # as messages name it
    fmt: Format
    columns: list[str]  # as found: CSV header, JSON keys, Parquet schema
    delim: str = ","
    data: Path | None = None  # the file the readers read, when not ``path``
    #: ``(line, bytes)`` of the lines over :data:`~.lines.MAX_LINE_BYTES` (CSV, JSONL).
    long: tuple[tuple[int, int], ...] = ()
    epoch: str | None = None  # the declared unit of numeric timestamps (s, ms, us)

    @property
    def file(self) -> Path:
        """The file the readers read: ``path`` or its copy without a byte-order mark."""
        return self.data or self.path

    @property
    def read_columns(self) -> list[str]:
        """The columns the reader yields: for JSON Lines every known column is
        read whether or not the sampled lines had it."""
        if self.fmt != "jsonl":
            return self.columns
        return [*self.columns, *(c for c in KNOWN if c not in self.columns)]

    def reader(self) -> str:
        """The table function that reads the rows, every CSV/JSON field as text."""
        p = quote_literal(str(self.file))
        if self.fmt == "csv":
            cols = ", ".join(f"{quote_literal(n)}: 'VARCHAR'" for n in self.columns)
            return (
                f"read_csv({p}, header = true, auto_detect = false, "
                f"delim = {quote_literal(self.delim)}, quote = '\"', escape = '\"', "
                f"columns = {{{cols}}}, store_rejects = true, ignore_errors = true, "
                "rejects_table = 'abeval_reject_errors', rejects_scan = 'abeval_reject_scans')"
            )
        if self.fmt == "parquet":
            return f"read_parquet({p})"
        # Text columns: a key that holds numbers on some lines and strings on others
        # reads the same either way. A malformed line becomes a row of NULLs (flagged
        # bad below), so rows keep their order.
        cols = ", ".join(f"{quote_literal(n)}: 'VARCHAR'" for n in self.read_columns)
        # A line longer than the reader's default largest object is read whole.
        longest = max((n for _, n in self.long), default=0)
        size = f", maximum_object_size = {longest + 1}" if longest >= _JSON_OBJECT else ""
        return (
            f"read_json({p}, format = 'newline_delimited', columns = {{{cols}}}, "
            f"ignore_errors = true{size})"
        )

    def lines_reader(self, lenient: bool = False) -> str:
        """The file as one text column, one row per physical line (blank: NULL);
        ``lenient`` skips lines that are not UTF-8 (so line numbers shift)."""
        return (
            f"read_csv({quote_literal(str(self.file))}, columns = {{'l': 'VARCHAR'}}, "
            f"header = false, auto_detect = false, delim = {_LINE_DELIM}, quote = '', "
            f"escape = '', strict_mode = false, max_line_size = {_ANY_LINE}, "
            # DuckDB's default buffer is 16 lines of the longest: 16 GiB, which a
            # compressed file allocates whole, past any ABEVAL_MEMORY_LIMIT.
            f"buffer_size = {_ANY_LINE}"
            f"{', ignore_errors = true' if lenient else ''})"
        )


def open_source(duck: Any, path: Path, fmt: Format, data: Path | None = None) -> Source:
    """Find the file's columns (and CSV delimiter) and check their names: each
    named once, and the event format's required columns present. ``data`` is the
    file to read when it is not ``path`` (a copy without a byte-order mark)."""
    src = _find_columns(duck, path, fmt, data)
    _check_names(src)
    _check_required(src)
    if fmt != "parquet" and lines.can_read(src.file):
        src = replace(src, long=tuple(lines.long_lines(src.file)))
    return src


def _find_columns(duck: Any, path: Path, fmt: Format, data: Path | None) -> Source:
    """The file with the columns its header, keys or schema name."""
    import duckdb

    if fmt == "csv":
        names, delim = _csv_header(data or path, path)
        for i, name in enumerate(names, start=1):
            if not name:
                raise InputError(
                    f"{path}:1: column {i} of the header has no name; name it or remove it"
                )
        return Source(path, fmt, names, delim, data)
    src = Source(path, fmt, [], data=data)
    try:
        if fmt == "parquet":
            rows = duck.execute(f"DESCRIBE SELECT * FROM {src.reader()}").fetchall()
            names = [r[0] for r in rows]
        else:
            names = _json_keys(duck, src)
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read as {fmt}: {first_line(exc)}") from None
    return Source(path, fmt, names, data=data)


def _where(src: Source) -> str:
    """Where a message about the columns points: the header line of a CSV file."""
    return f"{src.path}:1" if src.fmt == "csv" else str(src.path)


def _csv_header(file: Path, path: Path) -> tuple[list[str], str]:
    """Column names and delimiter from the first line of ``file`` (gzip-aware),
    named ``path`` in messages.

    Reading the header ourselves, rather than letting DuckDB sniff it, keeps the
    dialect fixed: a malformed row further down is then reported as such instead
    of changing what the reader guesses the header to be.
    """

    if not lines.can_read(file):
        return _csv_header_duckdb(file, path)
    try:
        raw = lines.first_line(file)
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read the header line: {exc}; is it a text CSV?") from None
    if len(raw) > lines.MAX_LINE_BYTES:
        raise InputError(
            f"{path}:1: the header line is longer than {lines.MAX_LINE_BYTES:,} bytes; "
            "is it a CSV file?"
        )
    try:
        first = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}:1: {NOT_UTF8}") from None
    return _split_header(path, first)


def _csv_header_duckdb(file: Path, path: Path) -> tuple[list[str], str]:
    """The header line of a file Python cannot decompress, read by DuckDB."""
    import duckdb

    src = Source(path, "csv", [], data=file)
    try:
        with duckdb.connect() as duck:
            row = duck.execute(f"SELECT l FROM {src.lines_reader(lenient=True)} LIMIT 1").fetchone()
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read the header line: {first_line(exc)}") from None
    return _split_header(path, (row[0] or "") if row else "")


def _split_header(path: Path, first: str) -> tuple[list[str], str]:
    """The names and delimiter of a header line (which ends at a carriage return,
    as it does for DuckDB's reader)."""
    import csv

    first = first.split("\r", 1)[0]
    if not first.strip():
        raise InputError(f"{path}:1: the header line is empty; expected {', '.join(REQUIRED)}")
    delim = max((",", "\t", ";", "|"), key=first.count)
    try:
        names = next(csv.reader([first], delimiter=delim))
    except csv.Error as exc:
        raise InputError(f"{path}:1: cannot read the header line: {exc}") from None
    return [n.strip() for n in names], delim


def _json_keys(duck: Any, src: Source) -> list[str]:
    """The top-level keys of the JSON objects in the first lines, sorted."""
    import pyarrow as pa

    if lines.can_read(src.file):
        sample = pa.table({"l": pa.array(lines.sample_lines(src.file, JSON_SAMPLE_LINES))})
        duck.register("abeval_json_sample", sample)
        relation = "abeval_json_sample"
    else:
        relation = (
            f"(SELECT l FROM {src.lines_reader()} "
            f"WHERE l IS NOT NULL AND trim(l) <> '' LIMIT {JSON_SAMPLE_LINES})"
        )
    try:
        rows = duck.execute(
            "SELECT DISTINCT unnest(json_keys(l)) AS k FROM "
            f"(SELECT l FROM {relation} s "
            "WHERE CASE WHEN json_valid(l) THEN json_type(l) = 'OBJECT' ELSE false END) o "
            "ORDER BY k"
        ).fetchall()
    finally:
        if relation == "abeval_json_sample":
            duck.unregister("abeval_json_sample")
    if not rows:
        raise InputError(
            f"{src.path}: no line holds a JSON object; expected JSON Lines, one object per "
            f"line with keys {', '.join(REQUIRED)}"
        )
    return [str(r[0]) for r in rows]


def _check_names(src: Source) -> None:
    """No column named twice, not even in another case."""
    seen: dict[str, str] = {}
    for name in src.columns:
        other = seen.get(name.lower())
        if other is not None:
            what = "appears twice" if other == name else f"and {other!r} differ only in case"
            raise InputError(f"{_where(src)}: column {name!r} {what}; rename one")
        seen[name.lower()] = name


def probable_columns(src: Source) -> dict[str, str]:
    """The file's extra columns that probably mean a column of the event format the
    file lacks (``userid`` → ``user_id``, ``timestamp`` → ``ts``), as
    ``{column: meant}``; a column differing only in case is left to the caller."""
    lower = {c.lower() for c in src.columns}
    absent = [c for c in KNOWN if c not in lower]
    out: dict[str, str] = {}
    for column in extras(src.columns):
        if column.lower() in KNOWN:
            continue
        close = close_matches(column, absent, aliases=COLUMN_ALIASES, n=1)
        if close and close[0] not in out.values():
            out[column] = close[0]
    return out


def column_notes(src: Source) -> list[str]:
    """Notes on columns that will be kept as attributes but probably mean an
    optional column of the event format."""
    return [
        f"column {c!r} is kept as an attribute; did you mean {m}? rename it to use it as {m}"
        for c, m in probable_columns(src).items()
        if m not in REQUIRED
    ]


def _check_required(src: Source) -> None:
    """Every required column present (with a hint when only its case differs)."""
    present = set(src.columns)
    missing = [c for c in REQUIRED if c not in present]
    if not missing:
        return
    lower = {c.lower(): c for c in src.columns}
    hints = [f"found {lower[m]!r}" for m in missing if m in lower]
    hint = f" ({'; '.join(hints)}: names are exact and lower case)" if hints else ""
    probable = sorted(probable_columns(src).items(), key=lambda cm: KNOWN.index(cm[1]))
    meant = [f"{c!r} for {m}" for c, m in probable if m in missing]
    if meant:
        hint += f" (did you mean {', '.join(meant)}? rename {'them' if len(meant) > 1 else 'it'})"
    raise InputError(
        f"{_where(src)}: missing required column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}{hint}; expected {', '.join(REQUIRED)} "
        f"and optionally {', '.join(c for c in KNOWN if c not in REQUIRED)}"
    )
