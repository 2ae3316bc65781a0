"""``abeval ingest``: load event files into the store, fast, validated and all or nothing.

How a file is loaded into a DuckDB store:

1. **Direct load.** One ``INSERT INTO events ... SELECT`` reads the file with
   DuckDB's own reader (``read_csv`` with every column as text, ``read_parquet``,
   ``read_json`` with every key as text), converts the types and checks every
   row in the same pass. A bad row stops the statement (DuckDB's ``error()``); so
   does a malformed CSV line (the reader's reject table is checked after). Rows
   already in the store and rows repeated in the file (same ``event_id``, or the
   same full row when there is no ``event_id``) are then deleted from what was
   just inserted, and ``experiments`` and ``ingests`` are updated, all in one
   transaction. A clean file, the common case, is read and written once.
2. **Staged load**, when the direct load stopped (and on other engines): the
   transaction is rolled back, and the file is read into a temporary staging
   table with a bad-row flag and the column and reason of the first failed
   check. The file's lines are indexed (one more read, on this path only) to give
   every bad row its physical line number and raw text. With
   ``on_error="abort"`` the first bad rows are reported as
   ``FILE:LINE:COLUMN: reason`` and nothing is written; with ``on_error="skip"``
   the good rows are inserted and their repeats deleted as in the direct load,
   and the bad rows go to ``rejected_rows``.

Either way a failed or killed ingest leaves the store as it was.

For another engine (PostgreSQL) only the staged load is used: it runs in an
in-memory DuckDB and the good rows reach the store through the engine's bulk
path (``COPY``).

Line numbers are the physical lines of the file, as an editor shows them: the
CSV header is line 1, blank lines count, and a quoted field that spans several
lines is reported at the line where its row starts. Parquet rows are numbered
from 1 (``FILE:row N``). In JSON Lines files, the keys found in the first
20,480 non-blank lines (plus every column of the event format) are read; an
attribute key that first appears later is not kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from abeval.errors import InputError
from abeval.store.events_format import (
    KNOWN,
    REQUIRED,
    bad_expression,
    extra_alias,
    extras,
    failure_column,
    failure_reason,
    layered,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store

Format = Literal["csv", "parquet", "jsonl"]
OnError = Literal["abort", "skip"]
MAX_SHOWN = 5
JSON_SAMPLE_LINES = 20_480
EVENT_COLUMNS = (*KNOWN, "attributes", "row_key")
# A delimiter no event file contains, to read a file as one text column per line.
_LINE_DELIM = "chr(28) || chr(29) || chr(30) || chr(31)"
_TEMP_TABLES = (
    "abeval_stage",
    "abeval_check",
    "abeval_lines0",
    "abeval_lines1",
    "abeval_spans",
    "abeval_lines",
    "abeval_rejects",
    "abeval_errors",
    "abeval_reject_errors",
    "abeval_reject_scans",
)


@dataclass(frozen=True)
class IngestSummary:
    """What one file's ingest did."""

    file: str
    format: str
    status: str  # "ok", "partial" (rows skipped) or "failed"
    rows_read: int
    inserted: int
    duplicates: int
    rejected: int
    seconds: float
    ingest_id: int | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        out["rows_per_second"] = round(self.rows_per_second)
        return out


def detect_format(path: Path, fmt: str | None) -> Format:
    if fmt:
        if fmt not in ("csv", "parquet", "jsonl"):
            raise InputError(f"{path}: unknown --format {fmt!r}; use csv, parquet or jsonl")
        return fmt  # type: ignore[return-value]
    name = path.name.lower()
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    raise InputError(
        f"{path}: cannot tell the format from the extension; "
        "name it .csv, .csv.gz, .parquet or .jsonl, or pass --format"
    )


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class _Source:
    """One input file: its format, the columns found in it and how to read it."""

    path: Path
    fmt: Format
    columns: list[str]  # as found: CSV header, JSON keys, Parquet schema
    delim: str = ","

    @property
    def read_columns(self) -> list[str]:
        """The columns the reader yields: for JSON Lines every known column is
        read whether or not the sampled lines had it."""
        if self.fmt != "jsonl":
            return self.columns
        return [*self.columns, *(c for c in KNOWN if c not in self.columns)]

    def reader(self) -> str:
        """The table function that reads the rows, every CSV/JSON field as text."""
        p = _sql_str(str(self.path))
        if self.fmt == "csv":
            cols = ", ".join(f"{_sql_str(n)}: 'VARCHAR'" for n in self.columns)
            return (
                f"read_csv({p}, header = true, auto_detect = false, "
                f"delim = {_sql_str(self.delim)}, quote = '\"', escape = '\"', "
                f"columns = {{{cols}}}, store_rejects = true, ignore_errors = true, "
                "rejects_table = 'abeval_reject_errors', rejects_scan = 'abeval_reject_scans')"
            )
        if self.fmt == "parquet":
            return f"read_parquet({p})"
        # Text columns: a key that holds numbers on some lines and strings on others
        # reads the same either way. A malformed line becomes a row of NULLs (flagged
        # bad below), so rows keep their order.
        cols = ", ".join(f"{_sql_str(n)}: 'VARCHAR'" for n in self.read_columns)
        return (
            f"read_json({p}, format = 'newline_delimited', columns = {{{cols}}}, "
            "ignore_errors = true)"
        )

    def lines_reader(self) -> str:
        """The file as one text column, one row per physical line (blank: NULL)."""
        return (
            f"read_csv({_sql_str(str(self.path))}, columns = {{'l': 'VARCHAR'}}, "
            f"header = false, auto_detect = false, delim = {_LINE_DELIM}, quote = '', "
            "escape = '', strict_mode = false)"
        )


def _csv_header(path: Path) -> tuple[list[str], str]:
    """Column names and delimiter from the first line (gzip-aware).

    Reading the header ourselves, rather than letting DuckDB sniff it, keeps the
    dialect fixed: a malformed row further down is then reported as such instead
    of changing what the reader guesses the header to be.
    """
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InputError(f"{path}: cannot read the header line: {exc}; is it a text CSV?") from None
    if not first.strip():
        raise InputError(f"{path}:1: the header line is empty; expected {', '.join(REQUIRED)}")
    delim = max((",", "\t", ";", "|"), key=first.count)
    names = next(csv.reader([first], delimiter=delim))
    return [n.strip() for n in names], delim


def _open_source(duck: Any, path: Path, fmt: Format) -> _Source:
    """Find the file's columns (and CSV delimiter) and check their names."""
    import duckdb

    if fmt == "csv":
        names, delim = _csv_header(path)
        src = _Source(path, fmt, names, delim)
        where = f"{path}:1"
        for i, name in enumerate(names, start=1):
            if not name:
                raise InputError(
                    f"{where}: column {i} of the header has no name; name it or remove it"
                )
    else:
        src = _Source(path, fmt, [])
        where = str(path)
        try:
            if fmt == "parquet":
                rows = duck.execute(f"DESCRIBE SELECT * FROM {src.reader()}").fetchall()
                names = [r[0] for r in rows]
            else:
                names = _json_keys(duck, src)
        except duckdb.Error as exc:
            raise InputError(f"{path}: cannot read as {fmt}: {_first_line(exc)}") from None
        src = _Source(path, fmt, names)
    seen: dict[str, str] = {}
    for name in src.columns:
        other = seen.get(name.lower())
        if other is not None:
            what = "appears twice" if other == name else f"and {other!r} differ only in case"
            raise InputError(f"{where}: column {name!r} {what}; rename one")
        seen[name.lower()] = name
    return src


def _json_keys(duck: Any, src: _Source) -> list[str]:
    """The top-level keys of the JSON objects in the first lines, sorted."""
    sample = (
        f"SELECT l FROM {src.lines_reader()} "
        f"WHERE l IS NOT NULL AND trim(l) <> '' LIMIT {JSON_SAMPLE_LINES}"
    )
    rows = duck.execute(
        "SELECT DISTINCT unnest(json_keys(l)) AS k FROM "
        f"(SELECT l FROM ({sample}) s "
        "WHERE CASE WHEN json_valid(l) THEN json_type(l) = 'OBJECT' ELSE false END) o "
        "ORDER BY k"
    ).fetchall()
    if not rows:
        raise InputError(
            f"{src.path}: no line holds a JSON object; expected JSON Lines, one object per "
            f"line with keys {', '.join(REQUIRED)}"
        )
    return [str(r[0]) for r in rows]


def _check_header(src: _Source) -> None:
    present = set(src.columns)
    missing = [c for c in REQUIRED if c not in present]
    if not missing:
        return
    lower = {c.lower(): c for c in src.columns}
    hints = [f"found {lower[m]!r}" for m in missing if m in lower]
    where = f"{src.path}:1" if src.fmt == "csv" else str(src.path)
    hint = f" ({'; '.join(hints)}: names are exact and lower case)" if hints else ""
    raise InputError(
        f"{where}: missing required column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}{hint}; expected {', '.join(REQUIRED)} "
        f"and optionally {', '.join(c for c in KNOWN if c not in REQUIRED)}"
    )


def _stage_sql(src: _Source) -> str:
    """One pass over the file: typed columns, attributes, the bad-row flag and,
    for rows without ``event_id``, a digest of the whole row for deduplication."""
    return "CREATE OR REPLACE TEMP TABLE abeval_stage AS " + _stage_select(src)


def _stage_select(src: _Source) -> str:
    """The ``SELECT`` of :func:`_stage_sql`."""
    columns = src.read_columns
    names = extras(columns)
    if names:
        pairs = ", ".join(
            f"{_sql_str(c)}, CAST({extra_alias(i)} AS VARCHAR)" for i, c in enumerate(names)
        )
        attributes = f"CAST(json_object({pairs}) AS VARCHAR)"
    else:
        attributes = "CAST(NULL AS VARCHAR)"
    key_parts = ", ".join(
        f"COALESCE(CAST({c} AS VARCHAR), '')" for c in (*KNOWN, "attributes") if c != "event_id"
    )
    return (
        f"SELECT {', '.join(KNOWN)}, attributes, bad, CASE WHEN event_id IS NULL "
        f"THEN 'h:' || md5(concat_ws(chr(31), {key_parts})) END AS row_key "
        f"FROM (SELECT *, {attributes} AS attributes, ({bad_expression()}) AS bad "
        f"FROM ({layered(src.reader(), columns)}) abeval_l) abeval_s"
    )


def _check_sql(src: _Source) -> str:
    """``abeval_check``: one narrow row per row read, in file order when run on one
    thread, with the column and reason of the first failed check of a bad row."""
    columns = src.read_columns
    if src.fmt == "parquet":
        # No text line to show: the row as a JSON object stands for it.
        fields = [f"{_sql_str(c)}, t_{c}" for c in KNOWN if c in src.columns]
        fields += [f"{_sql_str(c)}, {extra_alias(i)}" for i, c in enumerate(extras(columns))]
        raw = f"CAST(json_object({', '.join(fields)}) AS VARCHAR)"
    else:
        raw = "CAST(NULL AS VARCHAR)"
    return (
        "CREATE OR REPLACE TEMP TABLE abeval_check AS SELECT bad, "
        f"CASE WHEN bad THEN {failure_column()} END AS bad_column, "
        f"CASE WHEN bad THEN {failure_reason()} END AS bad_reason, "
        f"CASE WHEN bad THEN {raw} END AS bad_raw "
        f"FROM (SELECT *, ({bad_expression()}) AS bad "
        f"FROM ({layered(src.reader(), columns)}) abeval_l) abeval_s"
    )


def _index_lines(duck: Any, src: _Source) -> None:
    """``abeval_lines``: one row per record start with its physical line ``n``,
    the reader's line number ``dline`` (DuckDB counts blank lines but not the
    line breaks inside quoted fields), whether it is blank, and its raw text
    (all its lines, for a record with a quoted field that spans several)."""
    duck.execute(
        f"CREATE OR REPLACE TEMP TABLE abeval_lines0 AS SELECT l FROM {src.lines_reader()}"
    )
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_lines1 AS SELECT "
        "rowid - (SELECT MIN(rowid) FROM abeval_lines0) + 1 AS n, l FROM abeval_lines0"
    )
    duck.execute("CREATE OR REPLACE TEMP TABLE abeval_spans (first BIGINT, last BIGINT)")
    if src.fmt == "csv":
        spans = _continuation_spans(duck, src.delim)
        for i in range(0, len(spans), 1000):
            values = ", ".join(f"({int(a)}, {int(b)})" for a, b in spans[i : i + 1000])
            duck.execute(f"INSERT INTO abeval_spans VALUES {values}")
        blank = "l IS NULL"
    else:  # JSON Lines: strings cannot span lines; whitespace-only lines are skipped
        blank = "(l IS NULL OR trim(l, ' ' || chr(9) || chr(13)) = '')"
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_lines AS "
        "SELECT dline, MIN(n) AS n, bool_and(blank) AS blank, "
        "string_agg(COALESCE(l, ''), chr(10) ORDER BY n) AS raw FROM ("
        "SELECT n, l, blank AND NOT cont AS blank, SUM(CASE WHEN cont THEN 0 ELSE 1 END) "
        "OVER (ORDER BY n ROWS UNBOUNDED PRECEDING) AS dline FROM ("
        f"SELECT n, l, {blank} AS blank, EXISTS (SELECT 1 FROM abeval_spans s "
        "WHERE a.n BETWEEN s.first AND s.last) AS cont FROM abeval_lines1 a) b) c "
        "GROUP BY dline"
    )


def _continuation_spans(duck: Any, delim: str) -> list[tuple[int, int]]:
    """Ranges of physical lines that continue a record: the lines after one that
    leaves a quoted field open, through the line that closes it.

    A quote opens a field only at the field's start (elsewhere it is a literal
    character); inside an open field the parity of the quotes on a line tells
    whether it closes (``""`` is an escaped quote). Only the few lines that can
    change the state are read into Python, and only when some line opens a field.
    """
    d = "\\" + delim if delim in "|" else delim
    opens = f"regexp_matches(regexp_replace(l, '\"([^\"]|\"\")*\"', '', 'g'), '(^|{d})\"')"
    odd = "(length(l) - length(replace(l, '\"', ''))) % 2 = 1"
    first = duck.execute(
        f"SELECT MIN(n) FROM abeval_lines1 WHERE l IS NOT NULL AND {opens}"
    ).fetchone()[0]
    if first is None:
        return []
    rows = duck.execute(
        f"SELECT n, {opens}, {odd} FROM abeval_lines1 "
        f"WHERE n >= {int(first)} AND l IS NOT NULL AND ({opens} OR {odd}) ORDER BY n"
    ).fetchall()
    spans: list[tuple[int, int]] = []
    start = None  # the line that opened the field we are in
    for n, opened, odd_count in rows:
        if start is None and opened:
            start = n
        elif start is not None and odd_count:
            spans.append((start + 1, n))
            start = None
    if start is not None:
        spans.append((start + 1, 2**62))
    return spans


# DuckDB's reject types, as a user would put them.
_REJECT_REASON = """CASE
 WHEN etype IN ('TOO MANY COLUMNS', 'MISSING COLUMNS') AND regexp_matches(msg, 'Found: [0-9]+')
 THEN regexp_extract(msg, 'Found: ([0-9]+)', 1) || ' fields where the header has '
   || regexp_extract(msg, 'Columns: ([0-9]+)', 1) || '; check the delimiter and quoting'
 WHEN etype = 'UNQUOTED VALUE'
 THEN 'a quoted field is not closed, or text follows its closing quote; check the quoting'
 WHEN etype = 'INVALID UNICODE' THEN 'the line is not valid UTF-8; save the file as UTF-8'
 WHEN etype = 'LINE SIZE OVER MAXIMUM'
 THEN 'the line is longer than the reader accepts; check the quoting'
 ELSE lower(etype) || ' (' || msg || ')'
END"""


def _collect_errors(duck: Any, src: _Source, limit: int | None) -> None:
    """``abeval_errors(line, column_name, reason, raw)``: the bad rows in file order
    (the first ``limit`` rows flagged by checks, and the malformed lines).

    The file is read again on one thread: DuckDB's parallel readers do not always
    keep the file's row order in a table (a whole batch can land out of place), and
    rows are matched to lines by their rank. On one thread a new table's ``rowid``
    follows the file (from an offset: rows of a table created in the current
    transaction do not start at 0).
    """
    threads = duck.execute("SELECT current_setting('threads')").fetchone()[0]
    duck.execute("SET threads = 1")
    try:
        _locate_errors(duck, src, limit)
    finally:
        # After a failed statement the transaction is aborted and SET fails too:
        # the first error is the one to report.
        with contextlib.suppress(Exception):
            duck.execute(f"SET threads = {int(threads)}")


def _locate_errors(duck: Any, src: _Source, limit: int | None) -> None:
    lim = f"LIMIT {int(limit)}" if limit is not None else ""
    for t in ("abeval_reject_errors", "abeval_reject_scans"):
        duck.execute(f"DROP TABLE IF EXISTS {t}")
    duck.execute(_check_sql(src))
    flagged = (
        "(SELECT rowid - (SELECT MIN(rowid) FROM abeval_check) AS k, bad_column, bad_reason, "
        f"bad_raw FROM abeval_check WHERE bad ORDER BY k {lim})"
    )
    if src.fmt == "parquet":
        duck.execute(
            "CREATE OR REPLACE TEMP TABLE abeval_errors AS SELECT k + 1 AS line, "
            "bad_column AS column_name, bad_reason AS reason, bad_raw AS raw "
            f"FROM {flagged} e ORDER BY line"
        )
        return
    _index_lines(duck, src)
    if src.fmt == "csv":
        # A row with too few fields gets one reject per missing column: keep the first.
        duck.execute(
            "CREATE OR REPLACE TEMP TABLE abeval_rejects AS SELECT line AS dline, "
            "arg_min(column_name, column_idx) AS column_name, "
            "arg_min(error_type, column_idx) AS etype, "
            "arg_min(error_message, column_idx) AS msg, "
            "arg_min(csv_line, column_idx) AS raw "
            f"FROM abeval_reject_errors GROUP BY line ORDER BY line {lim}"
        )
        column, reason = "e.bad_column", "e.bad_reason"
        header = "AND n > 1"
        rejects = (
            f" UNION ALL SELECT COALESCE(l.n, r.dline), r.column_name, {_REJECT_REASON}, "
            "COALESCE(l.raw, r.raw) FROM abeval_rejects r LEFT JOIN abeval_lines l "
            "ON l.dline = r.dline"
        )
        # Every malformed line, also those past the limit, is missing from the rows.
        not_rejected = "AND dline NOT IN (SELECT line FROM abeval_reject_errors)"
    else:
        is_object = "CASE WHEN json_valid(m.raw) THEN json_type(m.raw) = 'OBJECT' ELSE false END"
        column = f"CASE WHEN {is_object} THEN e.bad_column ELSE '' END"
        reason = (
            f"CASE WHEN {is_object} THEN e.bad_reason "
            "ELSE 'malformed JSON; each line must be one JSON object' END"
        )
        header = rejects = not_rejected = ""
    # If a row cannot be matched to a line, its rank gives an estimate.
    first_row = 2 if src.fmt == "csv" else 1
    kept = (
        "SELECT n, raw, row_number() OVER (ORDER BY n) - 1 AS k FROM abeval_lines "
        f"WHERE NOT blank {header} {not_rejected}"
    )
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_errors AS SELECT * FROM ("
        f"SELECT COALESCE(m.n, e.k + {first_row}) AS line, {column} AS column_name, "
        f"{reason} AS reason, m.raw AS raw "
        f"FROM {flagged} e LEFT JOIN ({kept}) m ON m.k = e.k{rejects}) x ORDER BY line"
    )


def _prepare(duck: Any, path: Path, kind: Format, say: Callable[[str], None]) -> _Source:
    """Open and check the file's header, and set the connection up for a load."""
    src = _open_source(duck, path, kind)
    _check_header(src)
    say(f"reading {path}")
    for t in ("abeval_reject_errors", "abeval_reject_scans"):
        duck.execute(f"DROP TABLE IF EXISTS {t}")
    # Row order in what is loaded does not matter (the error path re-reads the
    # file in order), and dropping it halves the time DuckDB takes to load.
    duck.execute("SET preserve_insertion_order = false")
    return src


def _format_error(path: Path, fmt: Format, line: int, column: str | None, reason: str) -> str:
    where = f"{path}:{line}" if fmt != "parquet" else f"{path}:row {line}"
    return f"{where}:{column}: {reason}" if column else f"{where}: {reason}"


class _Checksum(threading.Thread):
    """SHA-256 of the file, computed beside DuckDB's read (hashlib releases the GIL)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.digest = ""
        self.size = 0  # bytes hashed

    def run(self) -> None:
        h = hashlib.sha256()  # hardware-accelerated on current CPUs: 2.5x blake2b here
        with self.path.open("rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
                self.size += len(chunk)
        self.digest = h.hexdigest()


def _next_ingest_id(conn: Connection) -> int:
    from sqlalchemy import text

    return int(conn.execute(text("SELECT nextval('ingest_id_seq')")).scalar_one())


def _drop_temp(duck: Any) -> None:
    """Drop the staging tables; after a failed statement the transaction is
    aborted and its rollback drops them instead."""
    import duckdb

    try:
        duck.execute("SET preserve_insertion_order = true")
        for t in _TEMP_TABLES:
            duck.execute(f"DROP TABLE IF EXISTS {t}")
    except duckdb.Error:
        pass


def _empty_file_message(shown: str, fmt: Format) -> str:
    expected = {
        "csv": f"expected a header line with {', '.join(REQUIRED)}",
        "jsonl": "expected JSON Lines, one event object per line",
        "parquet": "expected a Parquet file",
    }[fmt]
    return f"{shown}: the file is empty (0 bytes); {expected}"


def ingest_file(
    store: Store,
    path: str | Path,
    *,
    fmt: str | None = None,
    on_error: OnError = "abort",
    progress: Callable[[str], None] | None = None,
) -> IngestSummary:
    """Load one event file into ``store``; see the module docstring."""
    import duckdb

    started = time.time()
    t0 = time.perf_counter()
    path = Path(path)
    shown = str(path)
    if path.is_dir():
        raise InputError(f"{shown}: is a directory; name the event files in it")
    if not path.is_file():
        raise InputError(f"{shown}: no such file; check the path")
    kind = detect_format(path, fmt)
    size = path.stat().st_size
    if size == 0:
        raise InputError(_empty_file_message(shown, kind))
    checksum = _Checksum(path)
    checksum.start()
    say = progress or (lambda _msg: None)

    if store.is_duckdb:
        direct = _ingest_direct(store, path, kind, checksum, say, started, t0)
        if direct is not None:
            return direct

    local = None
    with store.begin() as conn:
        if store.is_duckdb:
            duck = conn.connection.driver_connection
        else:
            local = duckdb.connect()
            local.execute("SET TimeZone = 'UTC'")
            duck = local
        assert duck is not None
        try:
            src = _prepare(duck, path, kind, say)
            try:
                duck.execute(_stage_sql(src))
            except duckdb.Error as exc:
                raise InputError(f"{shown}: cannot read as {kind}: {_first_line(exc)}") from None
            n_good, n_bad = duck.execute(
                "SELECT count(*) FILTER (WHERE NOT bad), count(*) FILTER (WHERE bad) "
                "FROM abeval_stage"
            ).fetchone()
            n_malformed = 0
            if kind == "csv":
                n_malformed = duck.execute(
                    "SELECT count(DISTINCT line) FROM abeval_reject_errors"
                ).fetchone()[0]
            rows_read = int(n_good) + int(n_bad) + int(n_malformed)
            n_rejected = int(n_bad) + int(n_malformed)
            shown_errors: list[str] = []
            if n_rejected:
                say("locating bad rows")
                duck.execute("SET preserve_insertion_order = true")
                _collect_errors(duck, src, MAX_SHOWN if on_error == "abort" else None)
                first = duck.execute(
                    f"SELECT line, column_name, reason FROM abeval_errors LIMIT {MAX_SHOWN}"
                ).fetchall()
                shown_errors = [
                    _format_error(path, kind, int(r[0]), r[1], str(r[2])) for r in first
                ]
            if n_rejected and on_error == "abort":
                more = n_rejected - len(shown_errors)
                details = shown_errors[1:] + ([f"... and {more} more bad rows"] if more > 0 else [])
                raise InputError(
                    f"{shown_errors[0]} ({n_rejected} bad row{'s' if n_rejected > 1 else ''}; "
                    "nothing was loaded from this file; fix the rows or pass --on-error skip "
                    "to load the good rows)",
                    details=details,
                )
            say("inserting")
            ingest_id = _next_ingest_id(conn)
            inserted = _insert(store, conn, duck, ingest_id)
            if n_rejected:
                _store_rejects(store, conn, duck, ingest_id, shown)
            summary = _finish(
                conn,
                IngestSummary(
                    file=shown,
                    format=kind,
                    status="partial" if n_rejected else "ok",
                    rows_read=rows_read,
                    inserted=inserted,
                    duplicates=int(n_good) - inserted,
                    rejected=n_rejected,
                    seconds=0.0,
                    ingest_id=ingest_id,
                    errors=shown_errors,
                ),
                checksum,
                started,
                t0,
            )
        finally:
            _drop_temp(duck)
            if local is not None:
                local.close()
    return summary


class _NeedsStaging(Exception):
    """The direct load met a bad or malformed row: roll back and stage the file."""


_BAD_ROW_MARKER = "abeval: bad row, staging the file"


def _ingest_direct(
    store: Store,
    path: Path,
    kind: Format,
    checksum: _Checksum,
    say: Callable[[str], None],
    started: float,
    t0: float,
) -> IngestSummary | None:
    """The fast path for a DuckDB store: one ``INSERT ... SELECT`` straight from
    the reader into ``events``, with no staging table.

    Every row is checked in the same pass; a bad row stops the statement (DuckDB's
    ``error()``), and so does any other read error. Either way the transaction is
    rolled back, nothing has changed (not even the ingest id sequence, which does
    not roll back, so it is only advanced once the rows are in), and ``None``
    tells the caller to load the file through the staging path, which finds and
    reports every bad row. Clean files, the common case, are read and written
    once. Rows already in the store, and repeats inside the file, are then
    deleted from what was just inserted, within the same transaction.
    """
    import duckdb

    shown = str(path)
    duck: Any = None
    try:
        with store.begin() as conn:
            duck = conn.connection.driver_connection
            src = _prepare(duck, path, kind, say)
            # The id the sequence will give next; this process holds the store's
            # write lock, so nobody else can take it in between.
            ingest_id = int(
                duck.execute(
                    "SELECT COALESCE(last_value + increment_by, start_value) "
                    "FROM duckdb_sequences() WHERE sequence_name = 'ingest_id_seq' "
                    "AND database_name = current_database() AND schema_name = current_schema()"
                ).fetchone()[0]
            )
            cols = ", ".join(EVENT_COLUMNS)
            rows = _stage_select(src)
            marker = _sql_str(_BAD_ROW_MARKER)
            read = duck.execute(
                f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, "
                f"CASE WHEN bad THEN CAST(error({marker}) AS BIGINT) ELSE {int(ingest_id)} END "
                f"FROM ({rows}) s"
            ).fetchone()[0]
            if (
                kind == "csv"
                and duck.execute("SELECT count(*) FROM abeval_reject_errors").fetchone()[0]
            ):
                raise _NeedsStaging
            if _next_ingest_id(conn) != ingest_id:
                raise _NeedsStaging
            say("removing duplicates")
            duplicates = _delete_repeats(duck, ingest_id)
            summary = _finish(
                conn,
                IngestSummary(
                    file=shown,
                    format=kind,
                    status="ok",
                    rows_read=int(read),
                    inserted=int(read) - duplicates,
                    duplicates=duplicates,
                    rejected=0,
                    seconds=0.0,
                    ingest_id=ingest_id,
                ),
                checksum,
                started,
                t0,
            )
    except (_NeedsStaging, duckdb.Error):
        return None
    finally:
        if duck is not None:
            _drop_temp(duck)
    return summary


def _finish(
    conn: Connection, summary: IngestSummary, checksum: _Checksum, started: float, t0: float
) -> IngestSummary:
    """Bring ``experiments`` up to date and record the ingest; ``summary`` gets its
    time."""
    from dataclasses import replace

    assert summary.ingest_id is not None
    if summary.inserted:
        _refresh_experiments(conn, summary.ingest_id)
    checksum.join()
    done = replace(summary, seconds=time.perf_counter() - t0)
    _record_ingest(conn, done, checksum.size, checksum.digest, started)
    return done


# What identifies a row within its experiment (``{t}`` is a table alias and dot).
_KEY = "COALESCE({t}event_id, {t}row_key)"


def _may_repeat(duck: Any, relation: str) -> bool:
    """Whether two rows of ``relation`` may share a key within their experiment.

    Counts distinct 64-bit hashes: a collision can only make the count smaller,
    which answers "maybe" and sends the caller down the exact path, so a "no" is
    always right."""
    n_rows, n_keys = duck.execute(
        f"SELECT count(*), count(DISTINCT hash(experiment, {_KEY.format(t='')})) FROM {relation}"
    ).fetchone()
    return bool(n_keys < n_rows)


def _delete_repeats(duck: Any, ingest_id: int) -> int:
    """Delete the rows of ingest ``ingest_id`` that the store already held before
    it, and all but the earliest copy of a row repeated in the file; return how
    many were deleted."""
    i = int(ingest_id)
    removed = 0
    known = duck.execute(
        f"SELECT 1 FROM events WHERE ingest_id <> {i} AND experiment IN "
        f"(SELECT DISTINCT experiment FROM events WHERE ingest_id = {i}) LIMIT 1"
    ).fetchone()
    if known:
        removed += int(
            duck.execute(
                f"DELETE FROM events n WHERE n.ingest_id = {i} AND EXISTS (SELECT 1 FROM "
                f"events o WHERE o.ingest_id <> {i} AND o.experiment = n.experiment "
                f"AND {_KEY.format(t='o.')} = {_KEY.format(t='n.')})"
            ).fetchone()[0]
        )
    if _may_repeat(duck, f"(SELECT * FROM events WHERE ingest_id = {i}) r"):
        removed += int(
            duck.execute(
                f"DELETE FROM events WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                f"row_number() OVER (PARTITION BY experiment, {_KEY.format(t='')} ORDER BY ts) "
                f"AS abeval_k FROM events WHERE ingest_id = {i}) r WHERE abeval_k > 1)"
            ).fetchone()[0]
        )
    return removed


def _insert(store: Store, conn: Connection, duck: Any, ingest_id: int) -> int:
    """Insert the staged good rows that the store does not hold yet; return how many.

    On DuckDB the rows go in and :func:`_delete_repeats` takes out the repeats,
    as in the direct load. On another engine the repeats inside the file are
    dropped by a window in the local DuckDB (when :func:`_may_repeat`), and those
    already in the store by an anti-join on the server.
    """
    cols = ", ".join(EVENT_COLUMNS)
    if store.is_duckdb:
        n = duck.execute(
            f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, {int(ingest_id)} "
            "FROM abeval_stage WHERE NOT bad"
        ).fetchone()[0]
        return int(n) - _delete_repeats(duck, ingest_id)
    fresh = f"SELECT {cols} FROM abeval_stage s WHERE NOT bad"
    if _may_repeat(duck, f"({fresh}) s"):
        fresh = (
            f"SELECT {cols} FROM (SELECT s.*, row_number() OVER "
            f"(PARTITION BY experiment, {_KEY.format(t='')} ORDER BY ts) AS abeval_k "
            "FROM abeval_stage s WHERE NOT bad) s WHERE abeval_k = 1"
        )
    return _insert_via_copy(conn, duck, fresh, ingest_id)


def _insert_via_copy(conn: Connection, duck: Any, fresh: str, ingest_id: int) -> int:
    """Bulk path for PostgreSQL: DuckDB writes CSV, the server reads it with COPY."""
    from sqlalchemy import text

    cols = ", ".join(EVENT_COLUMNS)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stage.csv")
        duck.execute(
            f"COPY ({fresh}) TO {_sql_str(out)} (FORMAT csv, HEADER false, "
            "TIMESTAMPFORMAT '%Y-%m-%d %H:%M:%S.%f')"
        )
        conn.execute(
            text(
                f"CREATE TEMP TABLE abeval_stage ON COMMIT DROP AS SELECT {cols} FROM events "
                "WITH NO DATA"
            )
        )
        raw = conn.connection.driver_connection
        assert raw is not None
        with (
            raw.cursor() as cur,
            open(out, "rb") as f,
            cur.copy(f"COPY abeval_stage ({cols}) FROM STDIN (FORMAT csv)") as copy,
        ):
            while chunk := f.read(1 << 20):
                copy.write(chunk)
    result = conn.execute(
        text(
            f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, :ingest_id "
            "FROM abeval_stage s WHERE NOT EXISTS (SELECT 1 FROM events e "
            "WHERE e.experiment = s.experiment "
            f"AND {_KEY.format(t='e.')} = {_KEY.format(t='s.')})"
        ),
        {"ingest_id": ingest_id},
    )
    return int(result.rowcount)


def _store_rejects(store: Store, conn: Connection, duck: Any, ingest_id: int, file: str) -> None:
    """Copy ``abeval_errors`` to ``rejected_rows``: set-based on DuckDB."""
    from sqlalchemy import text

    if store.is_duckdb:
        duck.execute(
            "INSERT INTO rejected_rows (ingest_id, file, line, column_name, reason, raw) "
            f"SELECT {int(ingest_id)}, {_sql_str(file)}, line, NULLIF(column_name, ''), "
            "reason, raw FROM abeval_errors"
        )
        return
    rows = duck.execute("SELECT line, column_name, reason, raw FROM abeval_errors").fetchall()
    conn.execute(
        text(
            "INSERT INTO rejected_rows (ingest_id, file, line, column_name, reason, raw) "
            "VALUES (:i, :f, :l, :c, :r, :w)"
        ),
        [
            {"i": ingest_id, "f": file, "l": line, "c": col or None, "r": reason, "w": raw}
            for line, col, reason, raw in rows
        ],
    )


def _refresh_experiments(conn: Connection, ingest_id: int) -> None:
    """Recompute arms and time range of the experiments this ingest added to,
    keeping user settings."""
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO experiments (experiment, arms, first_ts, last_ts, updated_at) "
            "SELECT experiment, STRING_AGG(DISTINCT arm, ',' ORDER BY arm), MIN(ts), MAX(ts), "
            "CURRENT_TIMESTAMP FROM events WHERE experiment IN "
            "(SELECT DISTINCT experiment FROM events WHERE ingest_id = :i) GROUP BY experiment "
            "ON CONFLICT (experiment) DO UPDATE SET arms = excluded.arms, "
            "first_ts = excluded.first_ts, last_ts = excluded.last_ts, "
            "updated_at = excluded.updated_at"
        ),
        {"i": ingest_id},
    )


def _record_ingest(
    conn: Connection, s: IngestSummary, size: int, checksum: str, started: float
) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO ingests (ingest_id, source, format, size_bytes, checksum, rows_read, "
            "rows_inserted, rows_duplicate, rows_rejected, status, started_at, finished_at) "
            "VALUES (:id, :src, :fmt, :size, :sum, :read, :ins, :dup, :rej, :status, :t0, :t1)"
        ),
        {
            "id": s.ingest_id,
            "src": s.file,
            "fmt": s.format,
            "size": size,
            "sum": "sha256:" + checksum,
            "read": s.rows_read,
            "ins": s.inserted,
            "dup": s.duplicates,
            "rej": s.rejected,
            "status": s.status,
            "t0": datetime.fromtimestamp(started, UTC).replace(tzinfo=None),
            "t1": datetime.now(UTC).replace(tzinfo=None),
        },
    )
