"""One writer at a time on a Spark store, as on a DuckDB file.

The lock is a view, ``abeval_writer_lock``, in the session's current database:
``CREATE VIEW`` (without ``OR REPLACE``) is one metastore operation that fails
when the view exists, so of two writers that try together exactly one succeeds
(compare-and-set). The view's properties say who holds it (process, host, since
when, and a random claim); the holder drops it when it is done, however its
block ends. A writer that finds it held waits, says so once, and stops after
``ABEVAL_LOCK_TIMEOUT`` seconds (default 10) with one line naming the holder.

A holder that died without dropping it (killed, its machine lost) leaves the
view: a lock held by a process of this host that no longer runs is taken over
(dropped, if its claim is still the one read, and claimed again); a lock held
from another host is named in the message with the fix, ``DROP VIEW
abeval_writer_lock``, once that process is known to be gone.
"""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from abeval.errors import StoreError

LOCK = "abeval_writer_lock"
#: Seconds between two tries while the lock is held.
POLL_SECONDS = 0.5
_PREFIX = "abeval.lock."


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, from the view's properties."""

    claim: str
    pid: int
    host: str
    since: str

    @property
    def shown(self) -> str:
        return f"process {self.pid} on {self.host} (since {self.since} UTC)"

    def is_dead_here(self) -> bool:
        """Whether the holder is a process of this host that no longer runs."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


def holder(session: Any) -> Holder | None:
    """The lock's holder (None: nobody holds it)."""
    try:
        rows = session.sql(f"SHOW TBLPROPERTIES {LOCK}").collect()
    except Exception as exc:
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
            return None
        raise
    props = {str(r[0])[len(_PREFIX) :]: str(r[1]) for r in rows if str(r[0]).startswith(_PREFIX)}
    try:
        pid = int(props.get("pid", "0"))
    except ValueError:
        pid = 0
    return Holder(props.get("claim", ""), pid, props.get("host", "?"), props.get("since", "?"))


def try_claim(session: Any, me: Holder) -> bool:
    """Create the lock view for ``me``; False when another holds it."""
    props = ", ".join(
        f"'{_PREFIX}{k}' = '{v}'"
        for k, v in (("claim", me.claim), ("pid", me.pid), ("host", me.host), ("since", me.since))
    )
    try:
        session.sql(f"CREATE VIEW {LOCK} TBLPROPERTIES ({props}) AS SELECT 1 AS held").collect()
    except Exception as exc:
        if "ALREADY_EXISTS" in str(exc):
            return False
        raise
    return True


def release(session: Any, me: Holder) -> None:
    """Drop the lock if ``me`` still holds it."""
    found = holder(session)
    if found is not None and found.claim == me.claim:
        session.sql(f"DROP VIEW IF EXISTS {LOCK}").collect()


def _take_over(session: Any, dead: Holder) -> None:
    """Drop a lock left by a process of this host that no longer runs, if it is
    still that one's."""
    again = holder(session)
    if again is not None and again.claim == dead.claim:
        session.sql(f"DROP VIEW IF EXISTS {LOCK}").collect()


def _me() -> Holder:
    since = datetime.now(UTC).replace(tzinfo=None, microsecond=0).isoformat(sep=" ")
    return Holder(uuid.uuid4().hex, os.getpid(), socket.gethostname(), since)


@contextmanager
def writer_lock(
    session: Any,
    shown: str,
    timeout: float,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the store's writer lock for the block (module docstring)."""
    me = _me()
    deadline = time.monotonic() + timeout
    told = False
    while not try_claim(session, me):
        other = holder(session)
        if other is None:
            continue  # released between the two statements
        if other.is_dead_here():
            _take_over(session, other)
            continue
        if time.monotonic() >= deadline:
            raise StoreError(
                f"the store {shown} is locked by {other.shown}; wait for it to finish "
                f"(waited {timeout:g} s, set ABEVAL_LOCK_TIMEOUT to wait longer), or, if that "
                f"process has ended, drop the lock with DROP VIEW {LOCK}"
            )
        if on_wait is not None and not told:
            told = True
            on_wait(
                f"the store {shown} is locked by {other.shown}; waiting for it"
                + ("" if math.isinf(timeout) else f" (up to {timeout:g} s)")
            )
        time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        with suppress(Exception):  # a lost server: the lock is left for a take-over
            release(session, me)
