"""The table of kept summaries (``kept_summaries``, migration 0014): what one
experiment's analysis read of its events, kept as text under two digests made by
:mod:`abeval.analysis.kept` (``options_key``: the options it was computed under;
``depends``: what it was computed from). This module only reads and writes rows;
what a row holds and when it is current is the analysis's business.

A store without the table (Spark, whose own tables are made by the writes that
need them, or a store not migrated yet) keeps nothing: :func:`read_kept` finds
nothing and :func:`write_kept` writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval.store.migrate import has_own_table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database

TABLE = "kept_summaries"


@dataclass(frozen=True)
class KeptRow:
    """One part of one experiment's summary, ready to be written."""

    experiment: str
    part: str
    options_key: str
    depends: str
    body: str


def read_kept(conn: Connection, experiment: str, options_key: str, depends: str) -> dict[str, str]:
    """The kept texts of ``experiment``'s parts (part → text) under both digests,
    in one statement; empty when none is kept."""
    from sqlalchemy import text

    if not has_own_table(conn, TABLE):
        return {}
    rows = conn.execute(
        text(
            f"SELECT part, body FROM {TABLE} WHERE experiment = :e "
            "AND options_key = :k AND depends = :d"
        ),
        {"e": experiment, "k": options_key, "d": depends},
    ).fetchall()
    return {str(part): str(body) for part, body in rows}


def read_all_kept(
    conn: Connection, parts: Sequence[str]
) -> dict[tuple[str, str, str], dict[str, str]]:
    """Every kept text of ``parts``, by (experiment, options key, depends) → part →
    text, in one statement: what many experiments' sessions read at once."""
    from sqlalchemy import bindparam, text

    if not parts or not has_own_table(conn, TABLE):
        return {}
    rows = conn.execute(
        text(
            f"SELECT experiment, options_key, depends, part, body FROM {TABLE} WHERE part IN :parts"
        ).bindparams(bindparam("parts", expanding=True)),
        {"parts": list(parts)},
    )
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for experiment, key, depends, part, body in rows:
        found.setdefault((str(experiment), str(key), str(depends)), {})[str(part)] = str(body)
    return found


def write_kept(database: Database, rows: Sequence[KeptRow]) -> bool:
    """Write ``rows`` in one short transaction of the writable ``database``,
    replacing each row of the same key and every row of the experiment computed
    from something else (``depends``; of a store-wide result, experiment ``''``,
    every row of the same part). Whether they were written: a store without
    the table, or one that refuses the write (a lock held elsewhere, a read-only
    disk, a server that waits too long), keeps nothing and says nothing: a kept
    summary is only ever a shortcut."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    from abeval.errors import AbevalError

    if not rows or not database.backend.runs_migrations:  # Spark keeps nothing
        return not rows
    now = datetime.now(UTC).replace(tzinfo=None)
    try:
        with database.begin() as conn:
            if not has_own_table(conn, TABLE):
                return False
            database.backend.wait_briefly(conn)  # never wait long for another writer
            for r in rows:
                # the store-wide results (experiment '') do not depend on one another
                stale = "depends <> :d" if r.experiment else "part = :p AND depends <> :d"
                conn.execute(
                    text(
                        f"DELETE FROM {TABLE} WHERE experiment = :e AND ({stale} "
                        "OR (part = :p AND options_key = :k))"
                    ),
                    {"e": r.experiment, "d": r.depends, "p": r.part, "k": r.options_key},
                )
                conn.execute(
                    text(
                        f"INSERT INTO {TABLE} (experiment, part, options_key, depends, body, "
                        "kept_at) VALUES (:e, :p, :k, :d, :b, :t)"
                    ),
                    {
                        "e": r.experiment,
                        "p": r.part,
                        "k": r.options_key,
                        "d": r.depends,
                        "b": r.body,
                        "t": now,
                    },
                )
    except (SQLAlchemyError, AbevalError):
        return False
    return True


def count_kept(conn: Connection, experiment: str | None = None) -> int:
    """How many rows are kept (of ``experiment``, or of every experiment)."""
    from sqlalchemy import text

    if not has_own_table(conn, TABLE):
        return 0
    where = " WHERE experiment = :e" if experiment is not None else ""
    found = conn.execute(text(f"SELECT COUNT(*) FROM {TABLE}{where}"), {"e": experiment})
    return int(found.scalar_one())
