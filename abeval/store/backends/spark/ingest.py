"""``abeval ingest --db sc://...``: one file checked by DuckDB here, landed on Spark.

The file is read and every row checked by the same code as on any other engine
(the staged load of :mod:`abeval.store.ingest`, in an in-memory DuckDB): the
same one-line message for a bad row, the same accounting of every row read, the
same notes. The good rows (the first copy of a row repeated in the file) then
land on the cluster as Parquet and become visible in one commit
(:mod:`abeval.store.backends.spark.landing`); with ``on_error="skip"`` the bad rows land
in ``rejected_rows`` beside them, those whose ``event_id`` the store holds with
other content among them, as on DuckDB. The summary is the one DuckDB gives
(docs/design/spark.md#9-ingest-into-spark).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from abeval.choices import OnError
from abeval.errors import AbevalError, Interrupted
from abeval.store.backends.spark.schema import data_columns
from abeval.store.ingest.keys import number_staged
from abeval.store.ingest.notes import Normalised, notes_for
from abeval.store.ingest.record import with_notes
from abeval.store.ingest.repeats import find_conflicts, first_copies, may_repeat
from abeval.store.ingest.source import column_notes
from abeval.store.ingest.summary import IngestSummary
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.backends.spark.database import SparkDatabase
    from abeval.store.backends.spark.landing import Landing
    from abeval.store.ingest.record import Job
    from abeval.store.ingest.source import Source
    from abeval.store.ingest.staged import Counts

#: The uploaded columns, in the order of the Spark table (and of the upload's schema).
_COLUMNS = ", ".join(data_columns("events"))
#: Rows DuckDB hands over per Arrow record batch.
BATCH_ROWS = 100_000


def load_spark(store: SparkDatabase, job: Job, on_error: OnError) -> IngestSummary:
    """Check ``job``'s file locally, land its new rows (and with ``on_error="skip"``
    its bad rows, in ``rejected_rows``) on ``store``'s cluster, and say what
    happened as DuckDB's ingest says it. One writer at a time: the store's writer
    lock is held from the end of the local check to the end of the bookkeeping
    (:mod:`abeval.store.backends.spark.lock`)."""
    with ExitStack() as locked:
        return _load(store, job, on_error, locked)


def _load(store: SparkDatabase, job: Job, on_error: OnError, locked: ExitStack) -> IngestSummary:
    """:func:`load_spark`; the writer lock is taken into ``locked`` once the file
    is checked, before the cluster is asked anything."""
    from abeval.store.backends.spark.landing import Clashes, Landing
    from abeval.store.ingest import staged

    with staged.checked(store, None, job, on_error) as check:
        duck, src, counts, errors = check.duck, check.src, check.counts, check.errors
        locked.enter_context(store.writer_lock(store.on_lock_wait or job.say))
        job.say("uploading to Spark")
        with store.faults():
            landing = Landing(store)
        holds: list[tuple[str, str, int]] = []
        if counts.conflicts:  # skip: ids used twice in the file, maybe held by the store too
            with store.faults():
                holds = landing.holding(_conflicting_ids(duck))
            if holds:
                counts, errors = _restage(duck, src, job, holds)
        try:
            with store.faults():
                held, repeated = _land(landing, duck, counts.good, job.shown)
        except Clashes as clashes:
            if on_error == "abort":
                refused = _flag_clashes(duck, clashes.ids)
                errors = staged.locate(duck, src, job, on_error, refused)
                raise staged.refusal(errors, refused) from None
            # skip: the rows the store holds with other content join the bad rows
            counts, errors = _restage(duck, src, job, holds + clashes.ids)
            with store.faults():
                held, repeated = _land(landing, duck, counts.good, job.shown)
        if counts.refused:
            with store.faults():
                landing.keep_rejects(_rows(duck, _rejects_sql(job.shown)))
        summary = IngestSummary(
            file=job.shown,
            format=job.kind,
            status="partial" if counts.refused else "ok",
            rows_read=counts.read,
            inserted=counts.good - held - repeated,
            duplicates=held + repeated,
            rejected=counts.rejected,
            seconds=0.0,
            ingest_id=landing.ingest_id,
            errors=errors,
            repeated_in_file=repeated,
            already_stored=held,
            conflicts=counts.conflicts,
            notes=column_notes(src),
        )
        normalised = staged.normalised(duck)
    return _commit(store, landing, summary, job, normalised)


def _land(landing: Landing, duck: Any, n_good: int, file: str) -> tuple[int, int]:
    """Upload the good staged rows and keep in the ingest's partition folder the
    first copy of each row the store does not hold; return how many rows the
    store held and how many repeated another row of the file (counted in that
    order, as DuckDB counts them)."""
    names = [
        r[0]
        for r in duck.execute(
            "SELECT DISTINCT experiment FROM abeval_stage WHERE NOT bad"
        ).fetchall()
    ]
    _number_keys(landing, duck, names)  # again after a new staging
    # in the Spark table's column order, which the upload's schema follows
    good = f"SELECT {_COLUMNS} FROM abeval_stage s WHERE NOT bad"
    if landing.holds(names):
        landing.upload(_rows(duck, good), landing.layout.staging)
        return landing.keep_new(file)
    fresh = good
    if may_repeat(duck, f"({good}) s"):
        fresh = first_copies(_COLUMNS)
    first = int(duck.execute(f"SELECT count(*) FROM ({fresh}) s").fetchall()[0][0])
    landing.upload(_rows(duck, fresh), landing.layout.partition("events", landing.ingest_id))
    return 0, n_good - first


def _number_keys(landing: Landing, duck: Any, names: list[str]) -> None:
    """Give the staged rows their integer keys (``request_no``, ``item_no``:
    :mod:`abeval.store.ingest.keys`) against the numbers the Spark store holds:
    its numbered requests of the file's experiments, its numbered items, and the
    largest numbers it gave."""
    from sqlalchemy import text

    duck.execute("ALTER TABLE abeval_stage ADD COLUMN request_no BIGINT")
    duck.execute("ALTER TABLE abeval_stage ADD COLUMN item_no BIGINT")
    params = {f"x{i}": x for i, x in enumerate(names)}
    inside = ", ".join(f":x{i}" for i in range(len(names))) or "NULL"
    known = landing.conn.execute(
        text(
            "SELECT DISTINCT experiment, request_id, request_no, CAST(NULL AS VARCHAR) AS item_id, "
            "CAST(NULL AS BIGINT) AS item_no FROM events WHERE request_no IS NOT NULL "
            f"AND experiment IN ({inside}) UNION ALL "
            "SELECT DISTINCT CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT), "
            "item_id, item_no FROM events WHERE item_no IS NOT NULL UNION ALL "
            "SELECT CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), MAX(request_no), "
            "CAST(NULL AS VARCHAR), MAX(item_no) FROM events"
        ),
        params,
    ).fetchall()
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_spark_keys (experiment VARCHAR, request_id VARCHAR, "
        "request_no BIGINT, item_id VARCHAR, item_no BIGINT)"
    )
    if known:  # DuckDB's executemany refuses no rows
        duck.executemany(
            "INSERT INTO abeval_spark_keys VALUES (?, ?, ?, ?, ?)", [list(r) for r in known]
        )
    number_staged(duck, "abeval_stage", "abeval_spark_keys")


def _restage(
    duck: Any, src: Source, job: Job, ids: list[tuple[str, str, int]]
) -> tuple[Counts, list[str]]:
    """Stage the file again with the Spark store's rows of ``ids`` (experiment,
    event id, ingest: held with other content than some row of the file)
    standing for the store's rows, as a DuckDB store's own rows stand in its
    staged load: the same conflicts with the same reasons (an id used twice in
    the file and held by the store is worded as held), the checks over a
    request's rows after them; then locate every bad row
    (:func:`abeval.store.ingest.staged.stage`)."""
    from abeval.store.ingest import staged
    from abeval.store.ingest.staging import drop_rejects

    _held(duck, ids)
    drop_rejects(duck)
    duck.execute("SET preserve_insertion_order = false")
    counts = staged.stage(duck, src, False, held="abeval_spark_held o")
    return counts, staged.locate(duck, src, job, "skip", counts.refused)


def _conflicting_ids(duck: Any) -> list[tuple[str, str]]:
    """The ids the local check found used with other content in the file."""
    rows = duck.execute("SELECT experiment, event_id FROM abeval_conflicts").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _held(duck: Any, ids: list[tuple[str, str, int]]) -> None:
    """``abeval_spark_held``: a row for each of ``ids`` (experiment, event id,
    ingest), with the columns of the staged rows NULL, so that it differs from
    every row of the file (:func:`find_conflicts` then words the conflict as it
    does on a DuckDB store)."""
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_spark_held AS SELECT *, "
        "CAST(NULL AS BIGINT) AS ingest_id FROM abeval_stage WHERE false"
    )
    duck.executemany(
        "INSERT INTO abeval_spark_held (experiment, event_id, ingest_id) VALUES (?, ?, ?)",
        [list(i) for i in ids],
    )


def _flag_clashes(duck: Any, ids: list[tuple[str, str, int]]) -> int:
    """Flag as bad, with DuckDB's reason, the staged rows whose ``event_id`` the
    Spark store holds with other content (``ids``: experiment, id, ingest); return
    how many rows were flagged."""
    _held(duck, ids)
    find_conflicts(duck, "(SELECT * FROM abeval_stage WHERE NOT bad) n", "abeval_spark_held o")
    return int(
        duck.execute(
            "SELECT count(*) FROM abeval_stage s JOIN abeval_conflicts k "
            "ON s.experiment = k.experiment AND s.event_id = k.event_id WHERE NOT s.bad"
        ).fetchall()[0][0]
    )


def _rejects_sql(file: str) -> str:
    """The located bad rows (``abeval_errors``) as rows of ``rejected_rows``, in its
    Spark column order (what DuckDB's staged load inserts)."""
    value = {
        "file": quote_literal(file),
        "line": "line",
        "column_name": "NULLIF(column_name, '')",
        "reason": "reason",
        "raw": "raw",
    }
    cols = ", ".join(f"{value[c]} AS {c}" for c in data_columns("rejected_rows"))
    return f"SELECT {cols} FROM abeval_errors ORDER BY line"


def _rows(duck: Any, query: str) -> Callable[[], AbstractContextManager[Iterator[Any]]]:
    """The rows of ``query`` as Arrow record batches of :data:`BATCH_ROWS`, each
    time the result is called (read again from the start should the first way of
    landing them fail)."""

    @contextmanager
    def rows() -> Iterator[Any]:
        reader = duck.sql(query).to_arrow_reader(BATCH_ROWS)
        try:
            yield iter(reader)
        finally:
            reader.close()

    return rows


def _commit(
    store: SparkDatabase, landing: Landing, summary: IngestSummary, job: Job, normalised: Normalised
) -> IngestSummary:
    """Record the ingest, commit it, finish the bookkeeping and add the notes."""
    job.checksum.join()
    seconds = time.perf_counter() - job.t0
    with store.faults():
        landing.record(
            {
                "source": summary.file,
                "format": summary.format,
                "size_bytes": job.checksum.size,
                "checksum": "sha256:" + job.checksum.digest,
                "rows_read": summary.rows_read,
                "rows_inserted": summary.inserted,
                "rows_duplicate": summary.duplicates,
                "rows_rejected": summary.rejected + summary.conflicts,  # rows kept
                "status": summary.status,
                "started_at": datetime.fromtimestamp(job.started, UTC).replace(tzinfo=None),
                "finished_at": datetime.now(UTC).replace(tzinfo=None),
            }
        )
        landing.commit()
    try:
        with store.faults():
            landing.bookkeep(landing.ingest_id)
    except (KeyboardInterrupt, AbevalError) as exc:
        loaded = (
            f"the rows of {job.shown} were loaded (ingest {landing.ingest_id}); the next "
            "abeval ingest completes its record"
        )
        if isinstance(exc, AbevalError):
            exc.details.append(loaded)
            raise
        raise Interrupted(loaded, signum=getattr(exc, "signum", 2)) from None
    with store.faults():
        conn = cast("Connection", landing.conn)
        said = notes_for(conn, landing.ingest_id, normalised, bool(summary.inserted))
    return replace(with_notes(summary, said, normalised), seconds=seconds)
