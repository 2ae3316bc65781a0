"""``abeval ingest``: load event files into the store, fast, validated and all or nothing.

How a file is loaded (DuckDB store):

1. DuckDB's own reader (``read_csv`` with every column as text, ``read_parquet``,
   ``read_json``) streams the file into a temporary staging table, converting
   types and flagging bad rows in the same pass. Malformed CSV lines (too many or
   too few fields) are caught by the reader's reject tables.
2. If any row is bad and ``on_error="abort"``, the file is read once more to name
   the first bad rows as ``FILE:LINE:COLUMN: reason`` and nothing is written.
   With ``on_error="skip"`` the bad rows go to ``rejected_rows`` instead.
3. Good rows are inserted with one set-based ``INSERT ... SELECT`` that drops rows
   already in the store (same ``event_id``, or the same full row when there is no
   ``event_id``), then ``experiments`` and ``ingests`` are updated, all in one
   transaction: a failed or killed ingest leaves the store as it was.

For another engine (PostgreSQL), steps 1-2 run in an in-memory DuckDB and the
good rows reach the store through the engine's bulk path (``COPY``).

Line numbers count records from the header (line 1); a quoted field that spans
several physical lines counts once, as DuckDB's reader counts. Parquet rows are
numbered from 1.
"""

from __future__ import annotations

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
from abeval.store.events_format import KNOWN, REQUIRED, bad_expression, checks, layered, q

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store

Format = Literal["csv", "parquet", "jsonl"]
OnError = Literal["abort", "skip"]
MAX_SHOWN = 5
EVENT_COLUMNS = (*KNOWN, "attributes", "row_key")


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
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:  # type: ignore[operator]
            first = f.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the header line: {exc}; is it a text CSV?") from None
    if not first.strip():
        raise InputError(f"{path}:1: the header line is empty; expected {', '.join(REQUIRED)}")
    delim = max((",", "\t", ";", "|"), key=first.count)
    names = next(csv.reader([first], delimiter=delim))
    return [n.strip() for n in names], delim


def _reader(path: Path, fmt: Format, rejects: bool, csv_dialect: tuple[list[str], str] | None = None) -> str:
    p = _sql_str(str(path))
    if fmt == "csv":
        names, delim = csv_dialect or _csv_header(path)
        cols = ", ".join(f"{_sql_str(n)}: 'VARCHAR'" for n in names)
        extra = (
            ", store_rejects = true, ignore_errors = true, "
            "rejects_table = 'abeval_reject_errors', rejects_scan = 'abeval_reject_scans'"
            if rejects
            else ""
        )
        return (
            f"read_csv({p}, header = true, auto_detect = false, delim = {_sql_str(delim)}, "
            f"quote = '\"', escape = '\"', columns = {{{cols}}}{extra})"
        )
    if fmt == "parquet":
        return f"read_parquet({p})"
    return f"read_json({p}, format = 'newline_delimited')"


class _Checksum(threading.Thread):
    """BLAKE2b of the file, computed beside DuckDB's read (hashlib releases the GIL)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.digest = ""

    def run(self) -> None:
        h = hashlib.blake2b(digest_size=16)
        with self.path.open("rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        self.digest = h.hexdigest()


def _columns(duck: Any, path: Path, fmt: Format) -> list[str]:
    if fmt == "csv":
        names = _csv_header(path)[0]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(f"{path}:1: column {dupes[0]!r} appears twice in the header; rename one")
        return names
    try:
        rel = duck.execute(f"DESCRIBE SELECT * FROM {_reader(path, fmt, False)}").fetchall()
    except Exception as exc:  # noqa: BLE001 - DuckDB reader errors become one line
        raise InputError(f"{path}: cannot read as {fmt}: {_first_line(exc)}") from None
    return [r[0] for r in rel]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_header(path: Path, fmt: Format, columns: list[str]) -> None:
    present = set(columns)
    missing = [c for c in REQUIRED if c not in present]
    if not missing:
        return
    lower = {c.lower(): c for c in columns}
    hints = [f"found {lower[m]!r}" for m in missing if m in lower]
    where = f"{path}:1" if fmt == "csv" else str(path)
    hint = f" ({'; '.join(hints)}: names are exact and lower case)" if hints else ""
    raise InputError(
        f"{where}: missing required column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}{hint}; expected {', '.join(REQUIRED)} "
        f"and optionally {', '.join(c for c in KNOWN if c not in REQUIRED)}"
    )


def _stage_sql(path: Path, fmt: Format, columns: list[str]) -> str:
    """One pass over the file: typed columns, attributes, the bad-row flag and,
    for rows without ``event_id``, a digest of the whole row for deduplication."""
    extra = [c for c in columns if c not in KNOWN]
    if extra:
        pairs = ", ".join(f"{_sql_str(c)}, CAST({q(c)} AS VARCHAR)" for c in extra)
        attributes = f"CAST(json_object({pairs}) AS VARCHAR)"
    else:
        attributes = "CAST(NULL AS VARCHAR)"
    key_parts = ", ".join(
        f"COALESCE(CAST({c} AS VARCHAR), '')" for c in (*KNOWN, "attributes") if c != "event_id"
    )
    reader = _reader(path, fmt, fmt == "csv")
    return (
        "CREATE OR REPLACE TEMP TABLE abeval_stage AS "
        f"SELECT {', '.join(KNOWN)}, attributes, bad, CASE WHEN event_id IS NULL "
        f"THEN 'h:' || md5(concat_ws(chr(31), {key_parts})) END AS row_key "
        f"FROM (SELECT *, {attributes} AS attributes, ({bad_expression()}) AS bad "
        f"FROM ({layered(reader, columns)}) abeval_l) abeval_s"
    )


def _reject_lines(duck: Any, fmt: Format) -> list[tuple[int, str, str, str]]:
    """Structural CSV errors: (line, column, reason, raw line)."""
    if fmt != "csv":
        return []
    rows = duck.execute(
        "SELECT line, column_name, error_type, error_message, csv_line "
        "FROM abeval_reject_errors ORDER BY line"
    ).fetchall()
    out = []
    for line, column, etype, message, raw in rows:
        reason = f"{str(etype).lower()} ({message}); check the delimiter and quoting"
        out.append((int(line), column or "", reason, raw or ""))
    return out


def _row_errors(
    duck: Any,
    path: Path,
    fmt: Format,
    columns: list[str],
    rejects: list[tuple[int, str, str, str]],
    limit: int | None,
) -> list[tuple[int, str, str, str]]:
    """Bad rows as (line, column, reason, raw text), in file order."""
    reader = _reader(path, fmt, False)
    if fmt == "csv":
        # Same reject handling as the staging read, so the kept rows line up.
        duck.execute("DROP TABLE IF EXISTS abeval_reject_errors")
        duck.execute("DROP TABLE IF EXISTS abeval_reject_scans")
        reader = _reader(path, fmt, True)
    # A temporary table keeps the reader's row order: rowid numbers the kept rows.
    duck.execute(f"CREATE OR REPLACE TEMP TABLE abeval_raw AS SELECT * FROM {reader}")
    base = duck.execute("SELECT MIN(rowid) FROM abeval_raw").fetchone()[0] or 0
    raw_text = " || ',' || ".join(f"COALESCE(CAST({q(c)} AS VARCHAR), '')" for c in columns)
    source = f"(SELECT *, rowid AS abeval_row, {raw_text} AS abeval_text FROM abeval_raw)"
    cases = " ".join(f"WHEN {c.predicate} THEN '{c.column}'" for c in checks())
    reasons = " ".join(f"WHEN {c.predicate} THEN {c.reason}" for c in checks())
    lim = f"LIMIT {int(limit)}" if limit is not None else ""
    rows = duck.execute(
        f"SELECT abeval_row, CASE {cases} END, CASE {reasons} END, abeval_text "
        f"FROM ({layered(source, [*columns, 'abeval_row', 'abeval_text'])}) abeval_l "
        f"WHERE {bad_expression()} ORDER BY abeval_row {lim}"
    ).fetchall()
    first = 2 if fmt == "csv" else 1
    skipped = sorted(r[0] for r in rejects)
    out = []
    for row, column, reason, raw in rows:
        line = int(row) - int(base) + first
        # Lines the reader rejected shift the numbering of the rows after them.
        for s in skipped:
            if s <= line:
                line += 1
        out.append((line, str(column), str(reason), str(raw)))
    return out


def _format_error(path: Path, fmt: Format, line: int, column: str, reason: str) -> str:
    where = f"{path}:{line}" if fmt != "parquet" else f"{path}:row {line}"
    return f"{where}:{column}: {reason}" if column else f"{where}: {reason}"


def _next_ingest_id(conn: Connection) -> int:
    from sqlalchemy import text

    return int(conn.execute(text("SELECT nextval('ingest_id_seq')")).scalar_one())


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
    if not path.is_file():
        raise InputError(f"{shown}: no such file; check the path")
    size = path.stat().st_size
    if size == 0:
        raise InputError(
            f"{shown}: the file is empty; expected a header line with {', '.join(REQUIRED)}"
        )
    kind = detect_format(path, fmt)
    checksum = _Checksum(path)
    checksum.start()
    say = progress or (lambda _msg: None)

    local = None
    with store.begin() as conn:
        if store.is_duckdb:
            duck = conn.connection.driver_connection
        else:
            local = duckdb.connect()
            local.execute("SET TimeZone = 'UTC'")
            duck = local
        try:
            columns = _columns(duck, path, kind)
            _check_header(path, kind, columns)
            say(f"reading {shown}")
            for t in ("abeval_reject_errors", "abeval_reject_scans"):
                duck.execute(f"DROP TABLE IF EXISTS {t}")
            try:
                duck.execute(_stage_sql(path, kind, columns))
            except duckdb.Error as exc:
                raise InputError(f"{shown}: cannot read as {kind}: {_first_line(exc)}") from None
            n_good, n_bad = duck.execute(
                "SELECT count(*) FILTER (WHERE NOT bad), count(*) FILTER (WHERE bad) "
                "FROM abeval_stage"
            ).fetchone()
            rejects = _reject_lines(duck, kind)
            rows_read = int(n_good) + int(n_bad) + len(rejects)
            n_rejected = int(n_bad) + len(rejects)
            errors: list[tuple[int, str, str, str]] = []
            if n_rejected:
                say("locating bad rows")
                limit = MAX_SHOWN if on_error == "abort" else None
                errors = sorted(rejects + _row_errors(duck, path, kind, columns, rejects, limit))
                if limit is not None:
                    errors = errors[:limit]
            if n_rejected and on_error == "abort":
                shown_errors = [_format_error(path, kind, *e[:3]) for e in errors]
                more = n_rejected - len(shown_errors)
                details = shown_errors[1:] + (
                    [f"... and {more} more bad rows"] if more > 0 else []
                )
                raise InputError(
                    f"{shown_errors[0]} ({n_rejected} bad row{'s' if n_rejected > 1 else ''}; "
                    "nothing was loaded from this file; fix the rows or pass --on-error skip "
                    "to load the good rows)",
                    details=details,
                )
            say("inserting")
            ingest_id = _next_ingest_id(conn)
            inserted = _insert(store, conn, duck, ingest_id)
            if errors:
                _store_rejects(conn, duck, ingest_id, shown, errors)
            _refresh_experiments(conn)
            checksum.join()
            seconds = time.perf_counter() - t0
            summary = IngestSummary(
                file=shown,
                format=kind,
                status="partial" if n_rejected else "ok",
                rows_read=rows_read,
                inserted=inserted,
                duplicates=int(n_good) - inserted,
                rejected=n_rejected,
                seconds=seconds,
                ingest_id=ingest_id,
                errors=[_format_error(path, kind, *e[:3]) for e in errors[:MAX_SHOWN]],
            )
            _record_ingest(conn, summary, size, checksum.digest, started)
        finally:
            for t in ("abeval_stage", "abeval_raw"):
                duck.execute(f"DROP TABLE IF EXISTS {t}")
            if local is not None:
                local.close()
    return summary


def _insert(store: Store, conn: Connection, duck: Any, ingest_id: int) -> int:
    """Insert the staged good rows that the store does not hold yet; return how many."""
    cols = ", ".join(EVENT_COLUMNS)
    fresh = (
        f"SELECT {cols} FROM (SELECT s.*, row_number() OVER "
        "(PARTITION BY experiment, COALESCE(event_id, row_key) ORDER BY ts) AS abeval_k "
        "FROM abeval_stage s WHERE NOT bad) s WHERE abeval_k = 1"
    )
    if store.is_duckdb:
        result = duck.execute(
            f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, {int(ingest_id)} "
            f"FROM ({fresh}) s WHERE NOT EXISTS (SELECT 1 FROM events e "
            "WHERE e.experiment = s.experiment "
            "AND COALESCE(e.event_id, e.row_key) = COALESCE(s.event_id, s.row_key))"
        ).fetchone()
        return int(result[0])
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
                "CREATE TEMP TABLE abeval_stage (LIKE events INCLUDING DEFAULTS) ON COMMIT DROP"
            )
        )
        raw = conn.connection.driver_connection
        with raw.cursor() as cur, open(out, "rb") as f:
            with cur.copy(f"COPY abeval_stage ({cols}) FROM STDIN (FORMAT csv)") as copy:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)
    result = conn.execute(
        text(
            f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, :ingest_id "
            "FROM abeval_stage s WHERE NOT EXISTS (SELECT 1 FROM events e "
            "WHERE e.experiment = s.experiment "
            "AND COALESCE(e.event_id, e.row_key) = COALESCE(s.event_id, s.row_key))"
        ),
        {"ingest_id": ingest_id},
    )
    return int(result.rowcount)


def _store_rejects(
    conn: Connection, duck: Any, ingest_id: int, file: str, errors: list[tuple[int, str, str, str]]
) -> None:
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO rejected_rows (ingest_id, file, line, column_name, reason, raw) "
            "VALUES (:i, :f, :l, :c, :r, :w)"
        ),
        [
            {"i": ingest_id, "f": file, "l": line, "c": col or None, "r": reason, "w": raw}
            for line, col, reason, raw in errors
        ],
    )


def _refresh_experiments(conn: Connection) -> None:
    """Recompute arms and time range of every experiment, keeping user settings."""
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO experiments (experiment, arms, first_ts, last_ts, updated_at) "
            "SELECT experiment, STRING_AGG(DISTINCT arm, ',' ORDER BY arm), MIN(ts), MAX(ts), "
            "CURRENT_TIMESTAMP FROM events GROUP BY experiment "
            "ON CONFLICT (experiment) DO UPDATE SET arms = excluded.arms, "
            "first_ts = excluded.first_ts, last_ts = excluded.last_ts, "
            "updated_at = excluded.updated_at"
        )
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
            "sum": "blake2b-128:" + checksum,
            "read": s.rows_read,
            "ins": s.inserted,
            "dup": s.duplicates,
            "rej": s.rejected,
            "status": s.status,
            "t0": datetime.fromtimestamp(started, UTC).replace(tzinfo=None),
            "t1": datetime.now(UTC).replace(tzinfo=None),
        },
    )
