"""Locating bad rows: which physical line of the file each bad or malformed row
came from, so that a user reads ``FILE:LINE:COLUMN: reason``.

Line numbers are the physical lines of the file, as an editor shows them (see
the package docstring); Parquet rows are numbered from 1 (``FILE:row N``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from abeval.choices import FileFormat as Format
from abeval.errors import InputError
from abeval.store.events_format import (
    KNOWN,
    bad_expression,
    extra_alias,
    extras,
    failure_column,
    failure_reason,
    layered,
)
from abeval.store.ingest.lines import MAX_LINE_BYTES, can_read, load_lines
from abeval.store.ingest.requests import at_fault
from abeval.store.ingest.source import NOT_UTF8, Source
from abeval.store.ingest.staging import drop_rejects
from abeval.store.quoting import quote_literal

# DuckDB's reject types that concern the whole line, not one field.
_WHOLE_LINE = "'INVALID ENCODING', 'INVALID UNICODE', 'LINE SIZE OVER MAXIMUM'"
# A raw line longer than this is shown cut, with its length.
_SHOWN_RAW = 2000
# DuckDB's reject types, as a user would put them.
_REJECT_REASON = f"""CASE
 WHEN etype IN ('TOO MANY COLUMNS', 'MISSING COLUMNS') AND regexp_matches(msg, 'Found: [0-9]+')
 THEN regexp_extract(msg, 'Found: ([0-9]+)', 1) || ' fields where the header has '
   || regexp_extract(msg, 'Columns: ([0-9]+)', 1) || '; check the delimiter and quoting'
 WHEN etype = 'UNQUOTED VALUE'
 THEN 'a quoted field is not closed, or text follows its closing quote; check the quoting'
 WHEN etype = 'LINE SIZE OVER MAXIMUM'
 THEN 'the line is '
   || COALESCE(NULLIF(regexp_extract(msg, 'Actual Size: ?([0-9]+)', 1), '') || ' bytes', 'too long')
   || ', over the limit of {MAX_LINE_BYTES:,} bytes a line; check the quoting'
 WHEN etype IN ({_WHOLE_LINE}) THEN '{NOT_UTF8}'
 ELSE lower(etype) || ' (' || msg || ')'
END"""


def format_error(path: Path, fmt: Format, line: int, column: str | None, reason: str) -> str:
    """``FILE:LINE:COLUMN: reason`` (``FILE:row N`` for Parquet; no column when
    the whole line is at fault)."""
    where = f"{path}:{line}" if fmt != "parquet" else f"{path}:row {line}"
    return f"{where}:{column}: {reason}" if column else f"{where}: {reason}"


def first_errors(duck: Any, src: Source, limit: int) -> list[str]:
    """The first ``limit`` rows of ``abeval_errors`` as messages."""
    first = duck.execute(
        f"SELECT line, column_name, reason FROM abeval_errors LIMIT {int(limit)}"
    ).fetchall()
    return [format_error(src.path, src.fmt, int(r[0]), r[1], str(r[2])) for r in first]


def collect_errors(duck: Any, src: Source, limit: int | None) -> None:
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


def _check_sql(src: Source) -> str:
    """``abeval_check``: one narrow row per row read, in file order when run on one
    thread, with the column and reason of the first failed check of a bad row."""
    columns = src.read_columns
    if src.fmt == "parquet":
        # No text line to show: the row as a JSON object stands for it.
        fields = [f"{quote_literal(c)}, t_{c}" for c in KNOWN if c in src.columns]
        fields += [f"{quote_literal(c)}, {extra_alias(i)}" for i, c in enumerate(extras(columns))]
        raw = f"CAST(json_object({', '.join(fields)}) AS VARCHAR)"
    else:
        raw = "CAST(NULL AS VARCHAR)"
    return (
        "CREATE OR REPLACE TEMP TABLE abeval_check AS SELECT bad, experiment, event_id, "
        "request_id, event_type, "
        f"CASE WHEN bad THEN {failure_column()} END AS bad_column, "
        f"CASE WHEN bad THEN {failure_reason()} END AS bad_reason, "
        f"CASE WHEN bad THEN {raw} END AS bad_raw "
        f"FROM (SELECT *, ({bad_expression()}) AS bad "
        f"FROM ({layered(src.reader(), columns)}) abeval_l) abeval_s"
    )


def _locate_errors(duck: Any, src: Source, limit: int | None) -> None:
    """Flag the rows again, index the file's lines and match the two by rank."""
    lim = f"LIMIT {int(limit)}" if limit is not None else ""
    drop_rejects(duck)
    duck.execute(_check_sql(src))
    # Rows whose event_id conflicts (found by the staged load) are bad rows too.
    duck.execute(
        "UPDATE abeval_check c SET bad = true, bad_column = 'event_id', bad_reason = k.reason "
        "FROM abeval_conflicts k WHERE NOT c.bad AND c.experiment = k.experiment "
        "AND c.event_id = k.event_id"
    )
    # So are the impressions of a request at fault (abeval.store.ingest.requests).
    duck.execute(
        "UPDATE abeval_check c SET bad = true, bad_column = f.column_name, bad_reason = f.reason "
        f"FROM abeval_request_faults f WHERE NOT c.bad AND {at_fault('c')}"
    )
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
        _collect_rejects(duck, lim)
        column, reason = "e.bad_column", "e.bad_reason"
        header = "AND n > 1"
        rejects = (
            " UNION ALL SELECT COALESCE(l.n, r.dline), CASE WHEN r.etype IN "
            f"({_WHOLE_LINE}) THEN NULL ELSE r.column_name END, {_REJECT_REASON}, "
            "COALESCE(l.raw, r.raw) FROM abeval_rejects r LEFT JOIN abeval_lines l "
            "ON l.dline = r.dline"
        )
        # Every malformed line, also those past the limit, is missing from the rows.
        not_rejected = "AND dline NOT IN (SELECT line FROM abeval_reject_errors)"
    else:
        is_object = (
            "CASE WHEN json_valid(m.raw) AND NOT m.bad_utf8 THEN json_type(m.raw) = 'OBJECT' "
            "ELSE false END"
        )
        column = f"CASE WHEN {is_object} THEN e.bad_column ELSE '' END"
        reason = (
            f"CASE WHEN {is_object} THEN e.bad_reason WHEN m.bad_utf8 THEN '{NOT_UTF8}' "
            "WHEN starts_with(m.raw, chr(65279)) "
            "THEN 'the line starts with a byte-order mark (U+FEFF); remove it' "
            "ELSE 'malformed JSON; each line must be one JSON object' END"
        )
        header = rejects = not_rejected = ""
    # If a row cannot be matched to a line, its rank gives an estimate.
    first_row = 2 if src.fmt == "csv" else 1
    kept = (
        "SELECT n, raw, bad_utf8, row_number() OVER (ORDER BY n) - 1 AS k FROM abeval_lines "
        f"WHERE NOT blank {header} {not_rejected}"
    )
    shown = (
        f"CASE WHEN strlen(raw) > {_SHOWN_RAW} THEN left(raw, {_SHOWN_RAW}) || ' ... (' "
        "|| strlen(raw) || ' bytes in all)' ELSE raw END"
    )
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_errors AS SELECT line, column_name, reason, "
        f"{shown} AS raw FROM ("
        f"SELECT COALESCE(m.n, e.k + {first_row}) AS line, {column} AS column_name, "
        f"{reason} AS reason, m.raw AS raw "
        f"FROM {flagged} e LEFT JOIN ({kept}) m ON m.k = e.k{rejects}) x ORDER BY line"
    )


def _collect_rejects(duck: Any, lim: str) -> None:
    """``abeval_rejects``: the CSV reader's malformed lines, one row each (a row
    with too few fields gets one reject per missing column: keep the first)."""
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_rejects AS SELECT line AS dline, "
        "arg_min(column_name, COALESCE(column_idx, -1)) AS column_name, "
        "arg_min(error_type, COALESCE(column_idx, -1)) AS etype, "
        "arg_min(error_message, COALESCE(column_idx, -1)) AS msg, "
        "arg_min(csv_line, COALESCE(column_idx, -1)) AS raw "
        f"FROM abeval_reject_errors GROUP BY line ORDER BY line {lim}"
    )


def _index_lines(duck: Any, src: Source) -> None:
    """``abeval_lines``: one row per record start with its physical line ``n``,
    the reader's line number ``dline`` (DuckDB counts blank lines but not the
    line breaks inside quoted fields), whether it is blank, and its raw text
    (all its lines, for a record with a quoted field that spans several)."""
    if _duckdb_reads_lines(src):
        duck.execute(
            "CREATE OR REPLACE TEMP TABLE abeval_lines0 AS SELECT l, false AS bad_utf8 "
            f"FROM {src.lines_reader()}"
        )
    else:
        load_lines(duck, src.file, "abeval_lines0")
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_lines1 AS SELECT "
        "rowid - (SELECT MIN(rowid) FROM abeval_lines0) + 1 AS n, l, bad_utf8 FROM abeval_lines0"
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
        "SELECT dline, MIN(n) AS n, bool_and(blank) AS blank, bool_or(bad_utf8) AS bad_utf8, "
        "string_agg(COALESCE(l, ''), chr(10) ORDER BY n) AS raw FROM ("
        "SELECT n, l, bad_utf8, blank AND NOT cont AS blank, "
        "SUM(CASE WHEN cont THEN 0 ELSE 1 END) "
        "OVER (ORDER BY n ROWS UNBOUNDED PRECEDING) AS dline FROM ("
        f"SELECT n, l, bad_utf8, {blank} AS blank, EXISTS (SELECT 1 FROM abeval_spans s "
        "WHERE a.n BETWEEN s.first AND s.last) AS cont FROM abeval_lines1 a) b) c "
        "GROUP BY dline"
    )


def _duckdb_reads_lines(src: Source) -> bool:
    """Whether DuckDB's text reader reads every line of the file: it stops at the
    first byte that is not UTF-8 (tried on a scratch connection, as a failed
    statement would abort the load's transaction). Python reads the others."""
    import duckdb

    try:
        with duckdb.connect() as probe:
            probe.execute(f"SELECT max(strlen(l)) FROM {src.lines_reader()}").fetchone()
    except duckdb.Error:
        if can_read(src.file):
            return False
        raise InputError(
            f"{src.path}: some lines are not valid UTF-8 and the bad rows cannot be located "
            "in a zstd file; decompress it, or save it as UTF-8"
        ) from None
    return True


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
