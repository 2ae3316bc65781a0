"""``ingest_file``: one event file from its path into the store, by the direct
load when it can and the staged load otherwise."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.choices import OnError
from abeval.errors import InputError
from abeval.store.ingest.lines import (
    check_compressed,
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
    kind = check_file(path, fmt, shown)
    check_compressed(path, Path(shown) if shown is not None else path, on_error)
    checksum = Checksum(path)
    checksum.start()
    named = Path(shown) if shown is not None else path
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
