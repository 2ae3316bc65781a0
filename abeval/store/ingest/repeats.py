"""Repeats and conflicts: a row the store already holds, or a row repeated in the
file (same ``event_id``, or the same full row when there is none), is loaded
once; two rows with the same ``event_id`` and different content conflict, and
neither is loaded (the load reports them as bad rows)."""

from __future__ import annotations

from typing import Any

from abeval.store.events_format import KNOWN

# What identifies a row within its experiment (``{t}`` is a table alias and dot).
KEY = "COALESCE({t}event_id, {t}row_key)"
# What two rows with the same event_id must agree on.
CONTENT = (*(c for c in KNOWN if c not in ("experiment", "event_id")), "attributes")
_FIX = "give each event its own event_id"


def differs(a: str, b: str) -> str:
    """SQL: rows ``a`` and ``b`` (aliases) differ in content (portable)."""
    return "(" + " OR ".join(f"{a}.{c} IS DISTINCT FROM {b}.{c}" for c in CONTENT) + ")"


def _digest(t: str) -> str:
    """SQL (DuckDB): a digest of the content of row ``t`` (an alias)."""
    parts = ", ".join(f"COALESCE(CAST({t}.{c} AS VARCHAR), '')" for c in CONTENT)
    return f"md5(concat_ws(chr(31), {parts}))"


def may_repeat(duck: Any, relation: str) -> bool:
    """Whether two rows of ``relation`` may share a key within their experiment.

    Counts distinct 64-bit hashes: a collision can only make the count smaller,
    which answers "maybe" and sends the caller down the exact path, so a "no" is
    always right."""
    n_rows, n_keys = duck.execute(
        f"SELECT count(*), count(DISTINCT hash(experiment, {KEY.format(t='')})) FROM {relation}"
    ).fetchone()
    return bool(n_keys < n_rows)


def find_conflicts(
    duck: Any, relation: str, stored: str | None, repeats: bool | None = None
) -> int:
    """``abeval_conflicts(experiment, event_id, reason)``: the event ids of
    ``relation`` (new rows, aliased ``n``) used with different content in it, or
    by a row of ``stored`` (the store's rows aliased ``o``, or None); return how
    many. ``repeats`` is :func:`may_repeat` of ``relation`` when known."""
    quoted = "'''' || n.event_id || ''''"
    parts = []
    if repeats or (repeats is None and may_repeat(duck, relation)):
        parts.append(
            f"SELECT n.experiment, n.event_id, 'event_id ' || {quoted} || ' is used again in "
            f"this file with different content; {_FIX}' AS reason FROM {relation} "
            f"WHERE n.event_id IS NOT NULL GROUP BY n.experiment, n.event_id "
            f"HAVING count(DISTINCT {_digest('n')}) > 1"
        )
    if stored is not None:
        parts.append(
            f"SELECT DISTINCT n.experiment, n.event_id, 'event_id ' || {quoted} || ' is already "
            f"in the store (ingest ' || o.ingest_id || ') with different content; {_FIX}' "
            f"FROM {relation} JOIN {stored} ON o.experiment = n.experiment "
            f"AND o.event_id = n.event_id WHERE {differs('o', 'n')}"
        )
    body = " UNION ALL ".join(parts) or (
        "SELECT CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR) WHERE false"
    )
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE abeval_conflicts AS SELECT experiment, event_id, "
        f"min(reason) AS reason FROM ({body}) c(experiment, event_id, reason) "
        "GROUP BY experiment, event_id"
    )
    return int(duck.execute("SELECT count(*) FROM abeval_conflicts").fetchone()[0])


def delete_repeats(
    duck: Any, ingest_id: int, holds: bool | None = None, repeats: bool | None = None
) -> tuple[int, int]:
    """Delete the rows of ingest ``ingest_id`` that the store already held before
    it (same key and content: a conflicting row is left for
    :func:`clashes_with_store` to find), and all but the earliest copy of a row
    repeated in the file; return how many of each were deleted:
    ``(already_stored, repeated_in_file)``. ``holds`` and ``repeats`` are
    :func:`holds_experiments` and :func:`may_repeat` of the ingest's rows when
    the caller knows them."""
    i = int(ingest_id)
    stored = repeated = 0
    if holds is None:
        holds = holds_experiments(duck, i)
    if repeats is None:
        repeats = may_repeat(duck, f"(SELECT * FROM events WHERE ingest_id = {i}) r")
    if holds:
        stored = int(
            duck.execute(
                # A join, not EXISTS: DuckDB runs EXISTS with the content test
                # three times slower.
                f"DELETE FROM events n USING events o WHERE n.ingest_id = {i} "
                f"AND o.ingest_id <> {i} AND o.experiment = n.experiment "
                f"AND {KEY.format(t='o.')} = {KEY.format(t='n.')} AND NOT {differs('o', 'n')}"
            ).fetchone()[0]
        )
    if repeats:
        repeated = int(
            duck.execute(
                f"DELETE FROM events WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                f"row_number() OVER (PARTITION BY experiment, {KEY.format(t='')} ORDER BY ts) "
                f"AS abeval_k FROM events WHERE ingest_id = {i}) r WHERE abeval_k > 1)"
            ).fetchone()[0]
        )
    return stored, repeated


def clashes_with_store(duck: Any, ingest_id: int) -> bool:
    """Whether a row of ingest ``ingest_id`` has the ``event_id`` of a stored row
    of its experiment. After :func:`delete_repeats` the rows left differ from the
    stored ones, so this is a conflict; few rows are left when a file is loaded
    again, which keeps this cheaper than comparing every pair first."""
    i = int(ingest_id)
    return bool(
        duck.execute(
            f"SELECT 1 FROM events n WHERE n.ingest_id = {i} AND n.event_id IS NOT NULL "
            f"AND EXISTS (SELECT 1 FROM events o WHERE o.ingest_id <> {i} "
            "AND o.experiment = n.experiment AND o.event_id = n.event_id) LIMIT 1"
        ).fetchone()
    )


def holds_experiments(duck: Any, ingest_id: int) -> bool:
    """Whether the store held rows of the experiments of ingest ``ingest_id`` before it."""
    i = int(ingest_id)
    return bool(
        duck.execute(
            f"SELECT 1 FROM events WHERE ingest_id <> {i} AND experiment IN "
            f"(SELECT DISTINCT experiment FROM events WHERE ingest_id = {i}) LIMIT 1"
        ).fetchone()
    )


def first_copies(cols: str) -> str:
    """The staged good rows with only the earliest copy of each key (``cols``
    selected), for an engine where rows cannot be deleted after the insert."""
    return (
        f"SELECT {cols} FROM (SELECT s.*, row_number() OVER "
        f"(PARTITION BY experiment, {KEY.format(t='')} ORDER BY ts) AS abeval_k "
        "FROM abeval_stage s WHERE NOT bad) s WHERE abeval_k = 1"
    )
