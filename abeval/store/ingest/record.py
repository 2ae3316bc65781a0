"""The ingest record: the file's fingerprint (SHA-256, computed beside the
read), its ``ingests`` row and the ``experiments`` rows it brings up to date,
and :class:`Job`, what every step of one file's ingest shares."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.choices import FileFormat as Format
from abeval.files import sha256_file
from abeval.store.arm_lists import ARMS_JSON
from abeval.store.ingest.keys import number_ingest
from abeval.store.ingest.notes import Normalised, Notes, notes_for
from abeval.store.ingest.summary import IngestSummary

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


class Checksum(threading.Thread):
    """SHA-256 of the file, computed beside DuckDB's read (hashlib releases the GIL)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.digest = ""
        self.size = 0  # bytes hashed

    def run(self) -> None:
        self.digest, self.size = sha256_file(self.path)


@dataclass(frozen=True)
class Job:
    """One file being ingested: its path and format, its checksum (running), where
    progress goes, and when it started (wall clock for the record, a monotonic
    clock for the summary's seconds)."""

    path: Path
    kind: Format
    checksum: Checksum
    say: Callable[[str], None]
    started: float
    t0: float
    data: Path | None = None  # the file to read, when not ``path`` (no byte-order mark)
    epoch: str | None = None  # the declared unit of numeric timestamps (s, ms, us)

    @property
    def shown(self) -> str:
        """The file as messages and the record name it."""
        return str(self.path)


def next_ingest_id(conn: Connection) -> int:
    """Take the next ingest id from its sequence (which does not roll back)."""
    from sqlalchemy import text

    return int(conn.execute(text("SELECT nextval('ingest_id_seq')")).scalar_one())


def finish(
    conn: Connection, summary: IngestSummary, job: Job, normalised: Normalised | None = None
) -> IngestSummary:
    """Number the new rows' keys (:mod:`~abeval.store.ingest.keys`), bring
    ``experiments`` up to date and record the ingest; ``summary`` gets its
    time and its notes (:mod:`~abeval.store.ingest.notes`)."""
    assert summary.ingest_id is not None
    normalised = normalised or Normalised()
    if summary.inserted:
        number_ingest(conn, summary.ingest_id)
        _refresh_experiments(conn, summary.ingest_id)
    said = notes_for(conn, summary.ingest_id, normalised, bool(summary.inserted))
    summary = with_notes(summary, said, normalised)
    job.checksum.join()
    done = replace(summary, seconds=time.perf_counter() - job.t0)
    _record_ingest(conn, done, job.checksum.size, job.checksum.digest, job.started)
    return done


def with_notes(summary: IngestSummary, said: Notes, normalised: Normalised) -> IngestSummary:
    """``summary`` with the notes and warnings of :func:`notes_for` and what
    normalising changed (also for the ingest into Spark, abeval.store.backends.spark.ingest)."""
    return replace(
        summary,
        notes=[*said.notes, *summary.notes],
        warnings=said.warnings,
        trimmed_ids=normalised.trimmed,
        lowercased_event_types=normalised.lowercased,
        far_timestamps=said.far_timestamps,
        far_timestamp_range=list(said.far_range) if said.far_range else None,
    )


def _refresh_experiments(conn: Connection, ingest_id: int) -> None:
    """Recompute arms and time range of the experiments this ingest added to,
    keeping user settings."""
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO experiments (experiment, arms, first_ts, last_ts, updated_at) "
            f"SELECT experiment, {ARMS_JSON}, MIN(ts), MAX(ts), "
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
    """The ``ingests`` row of a finished ingest."""
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
            "rej": s.rejected + s.conflicts,  # every row kept in rejected_rows
            "status": s.status,
            "t0": datetime.fromtimestamp(started, UTC).replace(tzinfo=None),
            "t1": datetime.now(UTC).replace(tzinfo=None),
        },
    )
