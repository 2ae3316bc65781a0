"""DuckDB's errors that are no error of the query: its interrupt, and the faults of
its file. Every engine's ingest stages in DuckDB, so every backend asks these
(:mod:`abeval.store.backends.faults`)."""

from __future__ import annotations

import sys


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB saying that Ctrl-C (or SIGTERM) stopped its query:
    an ``InterruptException``, or the ``RuntimeError: Query interrupted`` of a
    raw DuckDB connection."""
    duckdb = sys.modules.get("duckdb")
    orig = getattr(exc, "orig", exc)
    if duckdb is not None and isinstance(orig, duckdb.InterruptException):
        return True
    return isinstance(orig, RuntimeError) and str(orig).startswith("Query interrupted")


def is_file_fault(orig: BaseException) -> bool | None:
    """For an error of DuckDB's driver, whether it is a fault of the file (an I/O
    error, a fatal one); None for any other error."""
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(orig, duckdb.Error):
        return isinstance(orig, duckdb.IOException | duckdb.FatalException)
    return None
