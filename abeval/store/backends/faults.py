"""A store's faults as one line: an I/O fault of the file, known damage (a truncated
or corrupt file, a missing permission, a full disk, a read-only file system) or a
lost server becomes one :class:`~abeval.errors.StoreError` naming the store
(password masked), with the fix when one is known; DuckDB's interrupt becomes a
``KeyboardInterrupt``. The base of every backend's
:meth:`~abeval.store.backends.base.Backend.fault`."""

from __future__ import annotations

from abeval.errors import StoreError, interruption
from abeval.store.backends.duckdb.faults import is_file_fault, is_interrupt
from abeval.store.backends.url_secrets import without_secrets

# Driver messages of a damaged store, and the fix each one wants.
FAULT_HINTS = (
    ("Could not read enough bytes", "the file is truncated or damaged; restore it from a backup"),
    ("Corrupt database file", "the file is damaged; restore it from a backup"),
    ("Permission denied", "abeval needs to write the store and its .wal file in that folder"),
    ("Is a directory", "a directory stands where the store's .wal file goes; move it away"),
    ("No space left", "the disk is full; free space and run the command again"),
    ("Read-only file system", "the store is on a read-only file system; copy it elsewhere"),
    (
        "Out of Memory Error",
        "DuckDB needed more memory than ABEVAL_MEMORY_LIMIT allows and could not spill it; "
        "raise ABEVAL_MEMORY_LIMIT or set ABEVAL_TEMP_DIR to a folder on a larger disk",
    ),
)


def store_fault(shown: str, url: str, exc: Exception) -> BaseException | None:
    """What to raise instead of ``exc``, escaped from a block of the store ``shown``
    (``url``): the interruption, or one line for a fault of the store; None for any
    other error, which goes on unchanged."""
    if is_interrupt(exc):
        return interruption()
    if not is_store_fault(exc):
        return None
    return StoreError(fault_message(shown, url, exc))


def is_store_fault(exc: BaseException) -> bool:
    """An I/O fault of DuckDB's file, a known damage, or a lost PostgreSQL server."""
    from sqlalchemy.exc import OperationalError

    orig = getattr(exc, "orig", None) or exc
    if any(marker in str(orig) for marker, _ in FAULT_HINTS):
        return True
    of_file = is_file_fault(orig)
    if of_file is not None:
        return of_file
    return isinstance(exc, OperationalError)


def hint(reason: str) -> str:
    """``; <fix>`` for a driver message that names a known fault, else nothing."""
    fix = next((fix for marker, fix in FAULT_HINTS if marker in reason), None)
    return f"; {fix}" if fix else ""


def fault_message(shown: str, url: str, exc: BaseException) -> str:
    """``the store X failed: <driver's first line>; <fix>`` with the password masked."""
    orig = getattr(exc, "orig", None) or exc
    reason = first_line(without_secrets(str(orig), url))
    return f"the store {shown} failed: {reason}{hint(reason)}"


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def is_aborted(exc: BaseException) -> bool:
    """Whether ``exc`` is the engine refusing a statement because an earlier one
    failed in the same transaction (DuckDB and PostgreSQL say so alike): a clean-up
    step that meets it leaves the earlier failure to be reported."""
    return "transaction is aborted" in str(exc).lower()
