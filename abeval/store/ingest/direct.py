"""The direct load, the fast path for a DuckDB store: one ``INSERT ... SELECT``
straight from the reader into ``events``, with no staging table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abeval.store.ingest.record import Job, finish, next_ingest_id
from abeval.store.ingest.repeats import delete_repeats, find_conflicts, holds_experiments
from abeval.store.ingest.source import Source, column_notes
from abeval.store.ingest.staging import EVENT_COLUMNS, drop_temp, prepare, stage_select
from abeval.store.ingest.summary import IngestSummary
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from abeval.store.engine import Store


class _NeedsStaging(Exception):
    """The direct load met a bad or malformed row: roll back and stage the file."""


_BAD_ROW_MARKER = "abeval: bad row, staging the file"


def load_direct(store: Store, job: Job) -> IngestSummary | None:
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
            src = prepare(duck, job.path, job.kind, job.say, job.data)
            ingest_id = _peek_ingest_id(duck)
            read = _insert_checked(duck, src, ingest_id)
            if _has_conflicts(duck, ingest_id):
                raise _NeedsStaging
            # Take the peeked id from the sequence: it must be the one the rows carry.
            if next_ingest_id(conn) != ingest_id:
                raise _NeedsStaging
            job.say("removing duplicates")
            stored, repeated = delete_repeats(duck, ingest_id)
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
            )
    except (_NeedsStaging, duckdb.Error):
        return None
    finally:
        if duck is not None:
            drop_temp(duck)
    return summary


def _has_conflicts(duck: Any, ingest_id: int) -> bool:
    """Whether an ``event_id`` of the rows just inserted is used with different
    content (in the file or in the store): the staged load reports those rows."""
    i = int(ingest_id)
    stored = None
    if holds_experiments(duck, i):
        stored = f"(SELECT * FROM events WHERE ingest_id <> {i}) o"
    return find_conflicts(duck, f"(SELECT * FROM events WHERE ingest_id = {i}) n", stored) > 0


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
    """Insert every row of the file under ``ingest_id``, stopping at the first bad
    row, and raise :class:`_NeedsStaging` if the CSV reader skipped a malformed
    line; return the number of rows read."""
    cols = ", ".join(EVENT_COLUMNS)
    marker = quote_literal(_BAD_ROW_MARKER)
    read = duck.execute(
        f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, "
        f"CASE WHEN bad THEN CAST(error({marker}) AS BIGINT) ELSE {int(ingest_id)} END "
        f"FROM ({stage_select(src)}) s"
    ).fetchone()[0]
    if src.fmt == "csv" and duck.execute("SELECT count(*) FROM abeval_reject_errors").fetchone()[0]:
        raise _NeedsStaging
    return int(read)
