"""``ingest_file``: one event file from its path into the store, by the direct
load when it can and the staged load otherwise."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.choices import FileFormat, OnError
from abeval.errors import InputError
from abeval.store.ingest.compressed import readable
from abeval.store.ingest.lines import (
    mixed_line_endings,
    unix_line_endings,
    without_bom,
)
from abeval.store.ingest.record import Checksum, Job
from abeval.store.ingest.source import check_file
from abeval.store.ingest.summary import IngestSummary

if TYPE_CHECKING:
    from abeval.store.database import Database


def ingest_file(
    store: Database,
    path: str | Path,
    *,
    fmt: str | None = None,
    on_error: OnError = "abort",
    progress: Callable[[str], None] | None = None,
    shown: str | None = None,
    epoch: str | None = None,
) -> IngestSummary:
    """Load one event file into ``store``; see :mod:`abeval.store.ingest`.
    ``shown``: how messages, the summary and the record name the input when not
    by ``path`` (``-`` for standard input spooled to ``path``); ``epoch``: the
    unit of numeric timestamps (``s``, ``ms``, ``us``; default: by magnitude)."""
    started = time.time()
    t0 = time.perf_counter()
    path = Path(path)
    named = Path(shown) if shown is not None else path
    kind = check_file(path, fmt, shown)
    checksum = Checksum(path)
    checksum.start()
    with readable(path, named, on_error) as (plain, cut):
        summary = _ingest(
            store, plain, named, kind, checksum, progress, started, t0, on_error, epoch
        )
    if cut is None:
        return summary
    # The whole lines before a cut were loaded (--on-error skip): said and counted.
    return replace(
        summary, status="partial", notes=[cut.note(), *summary.notes], lines_before_cut=cut.lines
    )


def _ingest(
    store: Database,
    path: Path,
    named: Path,
    kind: FileFormat,
    checksum: Checksum,
    progress: Callable[[str], None] | None,
    started: float,
    t0: float,
    on_error: OnError,
    epoch: str | None,
) -> IngestSummary:
    """Load ``path`` (the file as the engine reads it) under the name ``named``."""
    say = progress or (lambda _msg: None)
    # DuckDB's CSV reader skips a leading byte-order mark; its JSON reader does not.
    with without_bom(path) if kind == "jsonl" else contextlib.nullcontext(path) as data:
        job = Job(named, kind, checksum, say, started, t0, data=data, epoch=epoch)
        try:
            return _load(store, job, on_error)
        except InputError as exc:
            # DuckDB's reader stops at a file whose lines end both ways; read it again
            # with one line ending (the same lines, so the same line numbers).
            if kind != "csv" or "state machine" not in exc.message:
                raise
            if not mixed_line_endings(path):
                raise
    with unix_line_endings(path) as data:
        job = Job(named, kind, checksum, say, started, t0, data=data, epoch=epoch)
        return _load(store, job, on_error)


def _load(store: Database, job: Job, on_error: OnError) -> IngestSummary:
    """The engine's load (:meth:`abeval.store.backends.Backend.load_file`): on
    DuckDB the direct load where it applies and succeeds, else the staged load."""
    return store.backend.load_file(store, job, on_error)
