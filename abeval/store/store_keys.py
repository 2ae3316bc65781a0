"""The store's own secret keys (table ``store_keys``, migration 0011).

A key is 32 random bytes, made the first time it is asked for and kept in the
store, never shown. ``kept_evaluations`` signs the file ``abeval evaluate
--experiment`` keeps when the store refuses its record
(:mod:`abeval.store.evaluations`): HMAC-SHA256, so that whoever can edit the file
but cannot read the store cannot make one ``abeval experiment record`` accepts
(an unkeyed digest anyone can recompute; docs/metrics.md#recorded-evaluations).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval.store.migrate import has_own_table

if TYPE_CHECKING:
    from abeval.store.database import Database

#: The key that signs kept evaluations.
KEPT_EVALUATIONS = "kept_evaluations"


def existing_key(store: Database, name: str) -> bytes | None:
    """The store's key ``name``; None when it has none yet."""
    from sqlalchemy import text

    with store.connect() as conn:
        if not has_own_table(conn, "store_keys"):
            return None
        row = conn.execute(
            text("SELECT secret FROM store_keys WHERE name = :n"), {"n": name}
        ).fetchone()
    return None if row is None else bytes.fromhex(str(row[0]))


def store_key(store: Database, name: str) -> bytes:
    """The store's key ``name``, made and recorded now when it has none yet."""
    found = existing_key(store, name)
    if found is not None:
        return found
    row = {
        "name": name,
        "secret": secrets.token_hex(32),
        "created_at": datetime.now(UTC).replace(tzinfo=None),
    }
    store.backend.write_own_rows(store, "store_keys", "name", [name], [row])
    made = existing_key(store, name)  # another process's key, if it wrote last
    return made if made is not None else bytes.fromhex(str(row["secret"]))


def signature(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` under ``key``, in hex."""
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def signed_by(key: bytes, message: bytes, claimed: object) -> bool:
    """Whether ``claimed`` is ``message``'s signature under ``key`` (compared in
    constant time)."""
    return isinstance(claimed, str) and hmac.compare_digest(signature(key, message), claimed)
