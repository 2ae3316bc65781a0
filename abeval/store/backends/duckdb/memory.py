"""DuckDB's memory limit and spill folder, from ``ABEVAL_MEMORY_LIMIT`` and ``ABEVAL_TEMP_DIR``.

DuckDB keeps its working data under ``memory_limit`` and writes what does not fit
to files in ``temp_directory`` (hash aggregates, joins, sorts and windows all
spill), so a store larger than memory is analysed out of core. abeval sets both
on every DuckDB connection of the store (docs/architecture.md#memory-and-spilling):

- ``ABEVAL_MEMORY_LIMIT`` (default :data:`DEFAULT_MEMORY_LIMIT`): an amount such
  as ``4GB`` or ``3GiB``, or a share of this machine's memory such as ``25%``.
  DuckDB's own default is 80% of the memory, which the hash aggregates of a
  100M-event report would fill; abeval's queries return only per-arm sums and
  their large operators spill, so with 3 GiB the 100M-event ingest peaked at
  3.6 GiB and the report's online pass at 3.3 GiB (DuckDB's memory outside its
  buffers and Python's take the rest: benchmarks/RESULTS.md).
- ``ABEVAL_TEMP_DIR`` (default: the system's temporary folder, ``TMPDIR``): a
  writable folder. Each open store file spills into a folder of its own inside
  it (one per process and file: :func:`duckdb_memory`), which DuckDB creates at
  its first spill and which is removed when the file's last store is closed (and,
  if its process was killed first, when a later store is opened).
  It is never next to the store, so a read-only store on a read-only disk can
  spill too.

The replay and the off-policy sums, which run after the online pass, lower the
limit while they run (:func:`abeval.store.memory.memory_capped`, :data:`CAP_GIB`) unless their rows
need more (:data:`CAP_BYTES_PER_ROW`), and then put back the store's.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.errors import StoreError
from abeval.store.backends.faults import is_aborted

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

MEMORY_ENV = "ABEVAL_MEMORY_LIMIT"
TEMP_ENV = "ABEVAL_TEMP_DIR"
DEFAULT_MEMORY_LIMIT = "3GiB"
MIN_MEMORY_BYTES = 128 * 2**20
# The key of a store connection's ``info`` that holds the limit it was opened with.
MEMORY_LIMIT_INFO = "abeval_memory_limit_bytes"  # below this DuckDB fails on ordinary queries
_UNITS = {
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|[kmgt]i?b)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class DuckDBMemory:
    """The settings of one DuckDB connection: its memory limit in bytes and the
    folder it spills into (created by DuckDB when first needed)."""

    limit_bytes: int
    spill_dir: Path

    def config(self) -> dict[str, Any]:
        """The ``config`` of ``duckdb.connect``."""
        return {"memory_limit": f"{self.limit_bytes}B", "temp_directory": str(self.spill_dir)}

    def remove_spill_dir(self) -> None:
        """Remove the spill folder (DuckDB removes it when it closes cleanly; this is
        for the files of a connection that did not)."""
        shutil.rmtree(self.spill_dir, ignore_errors=True)


def physical_memory() -> int | None:
    """This machine's memory in bytes, when the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def parse_memory(value: str, total: int | None) -> int | None:
    """Bytes of an amount such as ``4GB``, ``3GiB`` or ``25%`` (of ``total``), or
    ``None`` when ``value`` is not one (or is a share with ``total`` unknown)."""
    match = _AMOUNT.match(value)
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "%":
        if total is None or not 0 < number <= 100:
            return None
        return int(total * number / 100)
    amount = number * _UNITS[unit]
    return int(amount) if math.isfinite(amount) and amount < 2**62 else None


def memory_limit() -> int:
    """``ABEVAL_MEMORY_LIMIT`` (else the default) in bytes; a :class:`StoreError`
    naming the variable when it is not an amount of at least 128 MiB."""
    given = os.environ.get(MEMORY_ENV)
    value = given or DEFAULT_MEMORY_LIMIT
    total = physical_memory()
    limit = parse_memory(value, total)
    if limit is None or limit < MIN_MEMORY_BYTES:
        raise StoreError(
            f"{MEMORY_ENV} must be an amount of memory of at least 128MiB, such as 4GB, "
            f"3GiB or 25% (of this machine's memory), got {value!r}"
        )
    if not given and total is not None:
        limit = min(limit, int(total * 0.8))  # DuckDB's own default on a small machine
    return limit


def spill_root() -> Path:
    """``ABEVAL_TEMP_DIR`` (else the system's temporary folder), checked to be a
    folder abeval can write in."""
    value = os.environ.get(TEMP_ENV)
    if not value:
        return Path(tempfile.gettempdir())
    folder = Path(value).expanduser()
    if not folder.is_dir():
        why = "does not exist" if not folder.exists() else "is not a folder"
        raise StoreError(f"{TEMP_ENV} must name a folder DuckDB can spill into; {value} {why}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"{TEMP_ENV} must name a folder DuckDB can spill into; abeval cannot write in {value}"
        )
    return folder.resolve()


def duckdb_memory(file: str | None = None) -> DuckDBMemory:
    """The settings for a new DuckDB connection, read from the environment now: the
    limit, and a spill folder of its own (not created yet) under the spill root,
    after removing the folders abandoned there (:func:`remove_abandoned_spills`).

    The connections of one process to one ``file`` get the same folder, so the
    same settings: DuckDB then lets them share its one database of that file (two
    stores of it open at once in a notebook), and refuses connections of one file
    with different settings. Its name is the process and a digest of the file's
    absolute path, as DuckDB names the file; without a file it is random."""
    import hashlib

    limit = memory_limit()
    root = spill_root()
    remove_abandoned_spills(root)
    if file is None:
        tag = os.urandom(4).hex()
    else:
        tag = hashlib.sha256(os.path.abspath(file).encode()).hexdigest()[:8]
    spill = root / f"abeval-spill-{os.getpid()}-{tag}"
    return DuckDBMemory(limit_bytes=limit, spill_dir=spill)


def shared_elsewhere(engine: Engine) -> bool:
    """Whether another connection of this process uses the DuckDB database that
    ``engine`` is connected to (another store of the same file): its spill folder
    is then still in use, and DuckDB removes it when its last connection closes."""
    from sqlalchemy import text

    try:
        with engine.connect() as conn:
            count = conn.execute(text("SELECT * FROM duckdb_connection_count()")).scalar()
    except Exception:  # a broken connection: nothing to keep its folder for
        return False
    return int(count or 0) > 1


_SPILL_NAME = re.compile(r"^abeval-spill-(\d+)-[0-9a-f]{8}$")
# A folder is abandoned only when nothing in it changed for this long: a process in
# another PID namespace (a container sharing the folder) looks gone from here.
ABANDONED_AFTER_S = 600.0


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError): running
        return True
    return True


def _last_change(folder: Path) -> float:
    times = [folder.stat().st_mtime]
    with os.scandir(folder) as entries:
        times += [e.stat(follow_symlinks=False).st_mtime for e in entries]
    return max(times)


def remove_abandoned_spills(root: Path, now: float | None = None) -> list[Path]:
    """Remove the spill folders under ``root`` that abeval processes left when they
    ended without closing their store (killed by SIGKILL or the kernel's
    out-of-memory killer: a 10M-event report's can hold 25 GB): the process its
    name gives is not running and nothing in it changed for
    :data:`ABANDONED_AFTER_S`. Folders of running processes, of other users or
    lately written, and anything not named like a spill folder, are left alone.
    The removed folders are returned."""
    import time

    now = time.time() if now is None else now
    removed = []
    try:
        with os.scandir(root) as entries:
            candidates = [e for e in entries if _SPILL_NAME.match(e.name)]
    except OSError:
        return []
    for entry in candidates:
        match = _SPILL_NAME.match(entry.name)
        assert match is not None
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
            if (
                _running(int(match.group(1)))
                or now - _last_change(Path(entry.path)) < ABANDONED_AFTER_S
            ):
                continue
        except OSError:  # gone meanwhile, or unreadable: not ours to remove
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


# DuckDB's memory for the steps after the online pass (the replay, the off-policy
# sums): above the online pass, the replay's largest joins (the item pairs of
# diversity@10) would take the process from 0.85 to 1.6 GB at 10M events and the
# off-policy impressions to 1.8 GB; capped, DuckDB spills what does not fit
# (benchmarks/RESULTS.md, issue 13).
CAP_GIB = 1.2
# What such a step needs per row of its largest table (the replay's ``ranked``, the
# off-policy impressions) to run at all: diversity's item-pair join, its similarity
# lookup and its per-list sums run in one pipeline, each thread holding its own
# part, and failed below about 27 bytes a row (0.13 GiB at 5.1M rows, 10M events;
# 1.2 GiB at 51M rows, 100M events). Above the cap this need, with a margin, lifts
# the cap, up to the store's own limit (docs/architecture.md#memory-and-spilling).
CAP_BYTES_PER_ROW = 64
_SHOWN = {"bytes": 2**-30, "KiB": 2**-20, "MiB": 2**-10, "GiB": 1.0, "TiB": 2**10}


def shown_gib(setting: str) -> float:
    """DuckDB's ``memory_limit`` as shown (``18.8 GiB``) in GiB; unknown: infinite."""
    number, _, unit = setting.strip().partition(" ")
    try:
        return float(number) * _SHOWN[unit]
    except (ValueError, KeyError):
        return float("inf")


def capped_gib(rows: int) -> float:
    """The cap for a step whose largest table has ``rows`` rows: :data:`CAP_GIB`, or
    what the rows need when that is more (:data:`CAP_BYTES_PER_ROW`)."""
    return max(CAP_GIB, rows * CAP_BYTES_PER_ROW / 2**30)


class MemoryCap:
    """DuckDB's ``memory_limit`` lowered while a step runs."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lowered = False

    def lower(self) -> None:
        """Lower the limit to :data:`CAP_GIB` unless it is lower already."""
        from sqlalchemy import text

        current = str(self.conn.execute(text("SELECT current_setting('memory_limit')")).scalar())
        if shown_gib(current) > CAP_GIB:
            self.conn.execute(text(f"SET memory_limit = '{CAP_GIB}GiB'"))
            self.lowered = True

    def fit(self, rows: int) -> None:
        """Once the step's largest table is known: the store's own limit again when
        its ``rows`` need more than the cap (:func:`capped_gib`)."""
        if self.lowered and capped_gib(rows) > CAP_GIB:
            self.restore()

    def restore(self) -> None:
        """Set the limit back to the one the store was opened with (``ABEVAL_MEMORY_LIMIT``)."""
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError

        if not self.lowered:
            return
        opened = self.conn.info.get(MEMORY_LIMIT_INFO)
        restore = f"SET memory_limit = '{int(opened)}B'" if opened else "RESET memory_limit"
        try:
            self.conn.execute(text(restore))
            self.lowered = False
        except DBAPIError as exc:  # after a failed statement: let its error through
            if not is_aborted(exc):
                raise
