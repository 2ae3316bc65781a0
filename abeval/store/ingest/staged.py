"""The staged load: the file is read into a temporary table with a bad-row flag,
bad rows are located and reported (``on_error="abort"``) or kept aside in
``rejected_rows`` (``"skip"``), and the good rows are inserted. The only load on
another engine than DuckDB, where the staging runs in an in-memory DuckDB."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abeval.choices import OnError
from abeval.errors import InputError
from abeval.store.ingest.keys import KEYS, add_keys, key_joins
from abeval.store.ingest.locate import (
    LONG_NOT_REJECTED,
    collect_errors,
    first_errors,
    note_long_lines,
)
from abeval.store.ingest.notes import Normalised
from abeval.store.ingest.record import Job, finish, next_ingest_id
from abeval.store.ingest.repeats import delete_repeats, find_conflicts, first_copies, may_repeat
from abeval.store.ingest.requests import at_fault, find_request_faults
from abeval.store.ingest.source import Source, column_notes, first_line
from abeval.store.ingest.staging import EVENT_COLUMNS, drop_temp, prepare, stage_sql
from abeval.store.ingest.summary import IngestSummary
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

MAX_SHOWN = 5


@dataclass(frozen=True)
class Counts:
    """The rows of the staged file: good, failing a check, and malformed (CSV lines
    the reader could not split into the header's fields)."""

    good: int
    bad: int
    malformed: int
    conflicts: int  # rows whose event_id is used with different content (not in good)

    @property
    def rejected(self) -> int:
        return self.bad + self.malformed

    @property
    def refused(self) -> int:
        """The rows reported as bad: rejected or conflicting."""
        return self.rejected + self.conflicts

    @property
    def read(self) -> int:
        return self.good + self.refused


def load_staged(store: Database, job: Job, on_error: OnError) -> IngestSummary:
    """Stage ``job``'s file, report or set aside its bad rows, and insert the good
    ones, all in one transaction of ``store``."""
    with store.begin() as conn, checked(store, conn, job, on_error) as check:
        duck, src, counts, errors = check.duck, check.src, check.counts, check.errors
        job.say("inserting")
        ingest_id = next_ingest_id(conn)
        stored, repeated = _insert(store, conn, duck, ingest_id, job.shown)
        if counts.refused:
            _store_rejects(store, conn, duck, ingest_id, job.shown)
        return finish(
            conn,
            IngestSummary(
                file=job.shown,
                format=job.kind,
                status="partial" if counts.refused else "ok",
                rows_read=counts.read,
                inserted=counts.good - stored - repeated,
                duplicates=stored + repeated,
                rejected=counts.rejected,
                seconds=0.0,
                ingest_id=ingest_id,
                errors=errors,
                repeated_in_file=repeated,
                already_stored=stored,
                conflicts=counts.conflicts,
                notes=column_notes(src),
            ),
            job,
            normalised(duck),
        )


@dataclass(frozen=True)
class Checked:
    """A file read into ``abeval_stage`` of ``duck`` and its bad rows located."""

    duck: Any
    src: Source
    counts: Counts
    errors: list[str]  # the first bad rows' messages


@contextlib.contextmanager
def checked(
    store: Database, conn: Connection | None, job: Job, on_error: OnError
) -> Iterator[Checked]:
    """Stage ``job``'s file in DuckDB (the store's own connection ``conn``, or an
    in-memory one for another engine) and check every row; with
    ``on_error="abort"`` a bad row stops here (:func:`refusal`). The staging
    tables last for the block."""
    with scratch(store, conn) as duck:
        src = prepare(duck, job.path, job.kind, job.say, job.data, job.epoch)
        counts = stage(duck, src, store.backend.stages_in_store)
        errors = locate(duck, src, job, on_error, counts.refused) if counts.refused else []
        if counts.refused and on_error == "abort":
            raise refusal(errors, counts.refused)
        yield Checked(duck, src, counts, errors)


@contextlib.contextmanager
def scratch(store: Database, conn: Connection | None) -> Iterator[Any]:
    """The DuckDB connection to stage in: the store's own, or an in-memory one for
    another engine, with the store's memory limit and a spill folder of its own
    (:mod:`abeval.store.backends.duckdb.memory`). Its staging tables are dropped after."""
    import duckdb

    from abeval.store.backends.duckdb.memory import duckdb_memory

    local, memory = None, None
    if store.backend.stages_in_store:
        assert conn is not None
        duck = conn.connection.driver_connection
    else:
        memory = duckdb_memory()
        local = duckdb.connect(config=memory.config())
        local.execute("SET TimeZone = 'UTC'")
        duck = local
    assert duck is not None
    try:
        yield duck
    finally:
        drop_temp(duck)
        if local is not None and memory is not None:
            local.close()
            memory.remove_spill_dir()


def stage(duck: Any, src: Source, on_duckdb: bool, held: str | None = None) -> Counts:
    """Read the file into ``abeval_stage`` and count its rows; rows whose event_id
    conflicts (see :func:`find_conflicts`) are flagged bad there. On another engine
    the store's rows are compared on the server (the backend's ``insert_staged``), or
    ``held`` (a local table of them aliased ``o``) stands for them."""
    import duckdb

    try:
        duck.execute(stage_sql(src))
    except duckdb.Error as exc:
        if "maximum_object_size" in str(exc):
            raise InputError(
                f"{src.path}: a line is longer than 16,777,216 bytes, the most the JSON reader "
                "takes for one object; shorten or remove it (nothing was loaded from this file)"
            ) from None
        raise InputError(f"{src.path}: cannot read as {src.fmt}: {first_line(exc)}") from None
    n_good, n_bad = duck.execute(
        "SELECT count(*) FILTER (WHERE NOT bad), count(*) FILTER (WHERE bad) FROM abeval_stage"
    ).fetchone()
    n_malformed = 0
    if src.fmt == "csv":
        note_long_lines(duck, src)
        n_malformed = (
            duck.execute("SELECT count(DISTINCT line) FROM abeval_reject_errors").fetchone()[0]
            + duck.execute(LONG_NOT_REJECTED.format(count="count(*)")).fetchone()[0]
        )
    n_conflicts = 0
    stored = "events o" if on_duckdb else held
    if find_conflicts(duck, "(SELECT * FROM abeval_stage WHERE NOT bad) n", stored):
        n_conflicts = int(
            duck.execute(
                "UPDATE abeval_stage s SET bad = true FROM abeval_conflicts k "
                "WHERE NOT s.bad AND s.experiment = k.experiment AND s.event_id = k.event_id"
            ).fetchone()[0]
        )
    n_faults = 0
    if find_request_faults(duck, "(SELECT * FROM abeval_stage WHERE NOT bad) n", src.columns):
        n_faults = int(
            duck.execute(
                f"UPDATE abeval_stage s SET bad = true FROM abeval_request_faults f "
                f"WHERE NOT s.bad AND {at_fault('s')}"
            ).fetchone()[0]
        )
    return Counts(
        int(n_good) - n_conflicts - n_faults, int(n_bad) + n_faults, int(n_malformed), n_conflicts
    )


def normalised(duck: Any) -> Normalised:
    """The good rows that normalising changed (see :func:`notes_for`)."""
    trimmed, lowered = duck.execute(
        "SELECT count(*) FILTER (WHERE norm % 2 = 1), count(*) FILTER (WHERE norm >= 2) "
        "FROM abeval_stage WHERE NOT bad"
    ).fetchone()
    return Normalised(int(trimmed), int(lowered))


def locate(duck: Any, src: Source, job: Job, on_error: OnError, n_bad: int) -> list[str]:
    """Find the lines of the bad rows (all of them when they are kept in
    ``rejected_rows``); return the first few as messages.

    Every bad row must be found: a row that is counted as rejected but cannot be
    kept in ``rejected_rows`` stops the load rather than being lost."""
    job.say("locating bad rows")
    duck.execute("SET preserve_insertion_order = true")
    collect_errors(duck, src, MAX_SHOWN if on_error == "abort" else None)
    found = int(duck.execute("SELECT count(*) FROM abeval_errors").fetchone()[0])
    if found != n_bad if on_error == "skip" else found < min(n_bad, MAX_SHOWN):
        raise InputError(
            f"{src.path}: {n_bad:,} bad rows were found but {found:,} of them could be "
            "matched to their lines; nothing was loaded from this file (please report this)"
        )
    return first_errors(duck, src, MAX_SHOWN)


def refusal(errors: list[str], n_rejected: int) -> InputError:
    """The error that stops an ``on_error="abort"`` ingest of a file with bad rows."""
    more = n_rejected - len(errors)
    details = errors[1:] + ([f"... and {more} more bad rows"] if more > 0 else [])
    return InputError(
        f"{errors[0]} ({n_rejected} bad row{'s' if n_rejected > 1 else ''}; "
        "nothing was loaded from this file; fix the rows or pass {on_error} skip "
        "to load the good rows)",
        details=details,
        parameters=("on_error",),
    )


def _insert(
    store: Database, conn: Connection, duck: Any, ingest_id: int, file: str
) -> tuple[int, int]:
    """Insert the staged good rows that the store does not hold yet; return how
    many were not: ``(already_stored, repeated_in_file)``.

    On DuckDB the rows go in and :func:`delete_repeats` takes out the repeats,
    as in the direct load. On another engine the repeats inside the file are
    dropped by a window in the local DuckDB (when :func:`may_repeat`), and those
    already in the store by an anti-join on the server.
    """
    cols = ", ".join(EVENT_COLUMNS)
    if store.backend.stages_in_store:
        add_keys(duck.execute, "(SELECT * FROM abeval_stage WHERE NOT bad) s")
        numbers, joins = key_joins("s")
        duck.execute(
            f"INSERT INTO events ({cols}, ingest_id, {', '.join(k.number for k in KEYS)}) "
            f"SELECT {', '.join(f's.{c}' for c in EVENT_COLUMNS)}, {int(ingest_id)}, "
            f"{numbers} FROM abeval_stage s {joins} WHERE NOT s.bad"
        )
        return delete_repeats(duck, ingest_id)
    fresh = f"SELECT {cols} FROM abeval_stage s WHERE NOT bad"
    n_good = int(duck.execute(f"SELECT count(*) FROM ({fresh}) s").fetchone()[0])
    if may_repeat(duck, f"({fresh}) s"):
        fresh = first_copies(cols)
    n_first = int(duck.execute(f"SELECT count(*) FROM ({fresh}) s").fetchone()[0])
    inserted = store.backend.insert_staged(conn, duck, fresh, ingest_id, file)
    return n_first - inserted, n_good - n_first


def _store_rejects(store: Database, conn: Connection, duck: Any, ingest_id: int, file: str) -> None:
    """Copy ``abeval_errors`` to ``rejected_rows``: set-based on DuckDB."""
    from sqlalchemy import text

    if store.backend.stages_in_store:
        duck.execute(
            "INSERT INTO rejected_rows (ingest_id, file, line, column_name, reason, raw) "
            f"SELECT {int(ingest_id)}, {quote_literal(file)}, line, NULLIF(column_name, ''), "
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
