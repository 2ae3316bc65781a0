"""Repeat removal: a row the store already holds, or a row repeated in the file
(same ``event_id``, or the same full row when there is none), is loaded once."""

from __future__ import annotations

from typing import Any

# What identifies a row within its experiment (``{t}`` is a table alias and dot).
KEY = "COALESCE({t}event_id, {t}row_key)"


def may_repeat(duck: Any, relation: str) -> bool:
    """Whether two rows of ``relation`` may share a key within their experiment.

    Counts distinct 64-bit hashes: a collision can only make the count smaller,
    which answers "maybe" and sends the caller down the exact path, so a "no" is
    always right."""
    n_rows, n_keys = duck.execute(
        f"SELECT count(*), count(DISTINCT hash(experiment, {KEY.format(t='')})) FROM {relation}"
    ).fetchone()
    return bool(n_keys < n_rows)


def delete_repeats(duck: Any, ingest_id: int) -> int:
    """Delete the rows of ingest ``ingest_id`` that the store already held before
    it, and all but the earliest copy of a row repeated in the file; return how
    many were deleted."""
    i = int(ingest_id)
    removed = 0
    known = duck.execute(
        f"SELECT 1 FROM events WHERE ingest_id <> {i} AND experiment IN "
        f"(SELECT DISTINCT experiment FROM events WHERE ingest_id = {i}) LIMIT 1"
    ).fetchone()
    if known:
        removed += int(
            duck.execute(
                f"DELETE FROM events n WHERE n.ingest_id = {i} AND EXISTS (SELECT 1 FROM "
                f"events o WHERE o.ingest_id <> {i} AND o.experiment = n.experiment "
                f"AND {KEY.format(t='o.')} = {KEY.format(t='n.')})"
            ).fetchone()[0]
        )
    if may_repeat(duck, f"(SELECT * FROM events WHERE ingest_id = {i}) r"):
        removed += int(
            duck.execute(
                f"DELETE FROM events WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                f"row_number() OVER (PARTITION BY experiment, {KEY.format(t='')} ORDER BY ts) "
                f"AS abeval_k FROM events WHERE ingest_id = {i}) r WHERE abeval_k > 1)"
            ).fetchone()[0]
        )
    return removed


def first_copies(cols: str) -> str:
    """The staged good rows with only the earliest copy of each key (``cols``
    selected), for an engine where rows cannot be deleted after the insert."""
    return (
        f"SELECT {cols} FROM (SELECT s.*, row_number() OVER "
        f"(PARTITION BY experiment, {KEY.format(t='')} ORDER BY ts) AS abeval_k "
        "FROM abeval_stage s WHERE NOT bad) s WHERE abeval_k = 1"
    )
