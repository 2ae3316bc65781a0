"""The direct load, the fast path for a DuckDB store: one ``INSERT ... SELECT``
straight from the reader into ``events``, with no staging table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abeval.store.backends.duckdb.direct_sql import direct_select, key_values
from abeval.store.ingest.keys import KEYS, add_keys, key_joins
from abeval.store.ingest.notes import Normalised
from abeval.store.ingest.record import Job, finish, next_ingest_id
from abeval.store.ingest.repeats import (
    clashes_with_store,
    delete_repeats,
    find_conflicts,
    holds_experiments,
    may_repeat,
)
from abeval.store.ingest.requests import find_request_faults
from abeval.store.ingest.source import Source, column_notes
from abeval.store.ingest.staging import EVENT_COLUMNS, drop_rejects, drop_temp, prepare
from abeval.store.ingest.summary import IngestSummary
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from abeval.store.database import Database


class _NeedsStaging(Exception):
    """The direct load met a bad or malformed row: roll back and stage the file."""


_BAD_ROW_MARKER = "abeval: bad row, staging the file"
# Rows that normalising changed are inserted under ingest_id + bits * _FLAG for a moment.
_FLAG = 1 << 40


def load_direct(store: Database, job: Job) -> IngestSummary | None:
    """Load ``job``'s file into a DuckDB store in one pass, or return None.

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

    duck: Any = None
    try:
        with store.begin() as conn:
            duck = conn.connection.driver_connection
            src = prepare(duck, job.path, job.kind, job.say, job.data, job.epoch)
            ingest_id = _peek_ingest_id(duck)
            read = _insert_checked(duck, src, ingest_id)
            normalised = _take_normalised(duck, ingest_id)
            new_rows = f"(SELECT * FROM events WHERE ingest_id = {int(ingest_id)}) n"
            if find_request_faults(duck, new_rows, src.columns):
                raise _NeedsStaging
            holds, repeats = _overlaps(duck, ingest_id)
            new = f"(SELECT * FROM events WHERE ingest_id = {int(ingest_id)}) n"
            if repeats and find_conflicts(duck, new, None, repeats):
                raise _NeedsStaging
            job.say("removing duplicates")
            stored, repeated = delete_repeats(duck, ingest_id, holds, repeats)
            # What is left of the new rows and shares an event_id with a stored row
            # differs from it.
            if holds and clashes_with_store(duck, ingest_id):
                raise _NeedsStaging
            # Take the peeked id from the sequence: it must be the one the rows carry.
            if next_ingest_id(conn) != ingest_id:
                raise _NeedsStaging
            summary = finish(
                conn,
                IngestSummary(
                    file=job.shown,
                    format=job.kind,
                    status="ok",
                    rows_read=read,
                    inserted=read - stored - repeated,
                    duplicates=stored + repeated,
                    rejected=0,
                    seconds=0.0,
                    ingest_id=ingest_id,
                    repeated_in_file=repeated,
                    already_stored=stored,
                    notes=column_notes(src),
                ),
                job,
                normalised,
            )
    except (_NeedsStaging, duckdb.Error):
        return None
    finally:
        if duck is not None:
            drop_temp(duck)
    return summary


def _overlaps(duck: Any, ingest_id: int) -> tuple[bool, bool]:
    """Whether the store held rows of the new rows' experiments, and whether two
    new rows may share a key: where repeats and conflicts can be."""
    i = int(ingest_id)
    new = f"(SELECT * FROM events WHERE ingest_id = {i}) n"
    return holds_experiments(duck, i), may_repeat(duck, new)


def _take_normalised(duck: Any, ingest_id: int) -> Normalised:
    """Count the rows that normalising changed and give them their ingest id.

    The insert marks them in the one pass it makes: a changed row carries
    ``ingest_id + bits * _FLAG`` (see :func:`~abeval.store.events_format.normalised`),
    set right here, in the same transaction, before anything else reads them."""
    i = int(ingest_id)
    marked = ", ".join(str(i + bits * _FLAG) for bits in (1, 2, 3))
    found = duck.execute(
        f"SELECT ingest_id - {i}, count(*) FROM events WHERE ingest_id IN ({marked}) GROUP BY 1"
    ).fetchall()
    if not found:
        return Normalised()
    duck.execute(f"UPDATE events SET ingest_id = {i} WHERE ingest_id IN ({marked})")
    by_bits = {int(k) // _FLAG: int(n) for k, n in found}
    return Normalised(
        trimmed=sum(n for b, n in by_bits.items() if b & 1),
        lowercased=sum(n for b, n in by_bits.items() if b & 2),
    )


def _peek_ingest_id(duck: Any) -> int:
    """The id the sequence will give next; this process holds the store's write
    lock, so nobody else can take it in between."""
    return int(
        duck.execute(
            "SELECT COALESCE(last_value + increment_by, start_value) "
            "FROM duckdb_sequences() WHERE sequence_name = 'ingest_id_seq' "
            "AND database_name = current_database() AND schema_name = current_schema()"
        ).fetchone()[0]
    )


def _insert_checked(duck: Any, src: Source, ingest_id: int) -> int:
    """Insert every row of the file under ``ingest_id`` with its key numbers,
    stopping at the first bad row, and raise :class:`_NeedsStaging` if the CSV
    reader skipped a malformed line; return the number of rows read.

    The file's keys go into the dictionaries first (a pass over the key columns
    alone), so that the insert writes each row once, numbered by joining them.
    Numbering the inserted rows afterwards with an ``UPDATE`` cost the same CPU
    but held every updated row in memory until the commit: a 100M-event file
    failed at the default 3 GiB (benchmarks/RESULTS.md)."""
    if src.fmt == "csv" and src.long:  # the reader would drop the longest without a word
        raise _NeedsStaging
    add_keys(duck.execute, f"({key_values(src)}) k")
    drop_rejects(duck)  # the insert reads the file again, into the same reject tables
    cols = ", ".join(EVENT_COLUMNS)
    numbers, joins = key_joins("s")
    marker = quote_literal(_BAD_ROW_MARKER)
    # DuckDB guesses a few dozen rows for the filtered reader and would build the
    # joins' hash tables on the file's rows (all of them, every column) instead of
    # on the dictionaries: at 2M rows 1.5 GB against 0.56 GB, 2.2 s more CPU. Keep the reader on
    # the probe side (drop_temp resets the setting, also after a failed statement).
    duck.execute("SET disabled_optimizers = 'build_side_probe_side'")
    read = duck.execute(
        f"INSERT INTO events ({cols}, ingest_id, {', '.join(k.number for k in KEYS)}) "
        f"SELECT {', '.join(f's.{c}' for c in EVENT_COLUMNS)}, "
        f"CASE WHEN s.good THEN {int(ingest_id)} + s.norm * {_FLAG} "
        f"ELSE CAST(error({marker}) AS BIGINT) END, {numbers} "
        f"FROM ({direct_select(src)}) s {joins}"
    ).fetchone()[0]
    duck.execute("RESET disabled_optimizers")
    if src.fmt == "csv" and duck.execute("SELECT count(*) FROM abeval_reject_errors").fetchone()[0]:
        raise _NeedsStaging
    return int(read)
