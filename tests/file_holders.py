"""Processes that hold a DuckDB file open (for writing or read-only) for some
seconds, for the tests of the store's locks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

_HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1], read_only=sys.argv[3] == "read")
    print("ready", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


class Hold(Protocol):
    def __call__(self, seconds: float) -> subprocess.Popen[str]: ...


@contextmanager
def holders(path: Path | str, *, read_only: bool = False) -> Iterator[Hold]:
    """``start(seconds)`` starts a process holding ``path`` open (read-only with
    ``read_only``) once it has opened it; every one is killed at the end."""
    procs: list[subprocess.Popen[str]] = []

    def start(seconds: float) -> subprocess.Popen[str]:
        mode = "read" if read_only else "write"
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path), str(seconds), mode],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
