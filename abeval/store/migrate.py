"""Schema migrations: numbered SQL files in ``migrations/``, applied in order.

Each file ``NNNN_name.sql`` is one step. A step runs in one transaction together
with the row that records it in ``schema_migrations``; a step that fails leaves
the store exactly as it was before that step.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.errors import StoreError
from abeval.resources import data_dir

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    def statements(self) -> list[str]:
        """The step's statements: split on ``;`` at the end of a line, comments dropped."""
        lines = [
            line for line in self.path.read_text().splitlines() if not line.strip().startswith("--")
        ]
        parts = re.split(r";\s*$", "\n".join(lines), flags=re.M)
        return [p.strip() for p in parts if p.strip()]


def available(folder: Path | None = None) -> list[Migration]:
    """All migrations in ``folder`` (default: the shipped ``migrations/``), in order."""
    folder = folder or data_dir("migrations")
    steps = []
    for path in sorted(folder.iterdir()):
        match = _NAME.match(path.name)
        if match:
            steps.append(Migration(int(match.group(1)), match.group(2), path))
    versions = [s.version for s in steps]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a number in {folder}")
    return steps


def _ensure_table(conn: Connection) -> None:
    from sqlalchemy import text

    conn.execute(
        text(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP NOT NULL)"
        )
    )


def has_own_table(conn: Connection, table: str) -> bool:
    """Whether the store has abeval's own table ``table`` (``sources``,
    ``offline_evaluations``). Migrations make them on DuckDB and PostgreSQL; on
    Spark no migration runs, and the first write that needs one creates it
    (:mod:`abeval.store.backends.spark.own_tables`)."""
    from abeval.store.backends import backend_of

    return backend_of(conn).has_own_table(conn, table)


def applied_versions(conn: Connection) -> set[int]:
    """Versions recorded in the store; empty when the store is new."""
    from sqlalchemy import inspect, text

    if not inspect(conn).has_table("schema_migrations"):
        return set()
    return {int(v) for v in conn.execute(text("SELECT version FROM schema_migrations")).scalars()}


def pending(store: Database, folder: Path | None = None) -> list[Migration]:
    """The steps this abeval knows that the store has not recorded. A store that
    records a step this abeval does not know was written by a newer abeval: it is
    refused, read-only or not, rather than read with the wrong schema."""
    with store.connect() as conn:
        done = applied_versions(conn)
    steps = available(folder)
    unknown = sorted(done - {m.version for m in steps})
    if unknown:
        newest = max((m.version for m in steps), default=0)
        raise StoreError(
            f"the store {store.display} has schema version {unknown[-1]:04d}, newer than this "
            f"abeval knows (up to {newest:04d}): upgrade abeval (pip install --upgrade abeval), "
            "or use the abeval that wrote it"
        )
    return [m for m in steps if m.version not in done]


def _already_there(step: Migration, reason: str, shown: str) -> StoreError | None:
    """The error for a step whose objects exist although the step is not recorded:
    the bookkeeping in ``schema_migrations`` lost its row."""
    if "already exists" not in reason:
        return None
    return StoreError(
        f"the store {shown} is not recorded as having migration "
        f"{step.version:04d}_{step.name}, yet it holds what that step creates ({reason}); "
        "its schema_migrations table has lost a row. Nothing was changed: check the store, "
        "then record the step with INSERT INTO schema_migrations (version, name, applied_at) "
        f"VALUES ({step.version}, '{step.name}', CURRENT_TIMESTAMP), or restore a backup"
    )


def apply(store: Database, folder: Path | None = None) -> list[Migration]:
    """Apply every pending step, each in its own transaction. Returns the steps applied."""
    from sqlalchemy import text

    with store.begin() as conn:
        _ensure_table(conn)
    done_steps = []
    for step in pending(store, folder):
        try:
            with store.begin() as conn:
                for statement in step.statements():
                    conn.execute(text(statement))
                _after(step.version, conn)
                conn.execute(
                    text(
                        "INSERT INTO schema_migrations (version, name, applied_at) "
                        "VALUES (:v, :n, CURRENT_TIMESTAMP)"
                    ),
                    {"v": step.version, "n": step.name},
                )
        except Exception as exc:
            first = str(exc).strip().splitlines()[0]
            lost = _already_there(step, _driver_reason(exc), store.display)
            if lost is not None:
                raise lost from None
            raise StoreError(
                f"migration {step.version:04d}_{step.name} failed and was rolled back: {first}"
            ) from exc
        done_steps.append(step)
    return done_steps


def _after(version: int, conn: Connection) -> None:
    """What a step does beyond its SQL, in its transaction: 0010 numbers the
    stored rows' keys and fills the dictionaries, as an ingest would."""
    if version == 10:
        from abeval.store.ingest.keys import number_stored

        number_stored(conn)


def _driver_reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def ensure_current(store: Database, folder: Path | None = None) -> None:
    """Upgrade a writable store; for a read-only one, say which command upgrades it."""
    if store.read_only:
        missing = pending(store, folder)
        if missing:
            names = ", ".join(f"{m.version:04d}_{m.name}" for m in missing)
            raise StoreError(
                f"the store {store.display} needs schema upgrades ({names}); "
                f"run `abeval migrate --db {shlex.quote(store.display)}`"
            )
        return
    apply(store, folder)
