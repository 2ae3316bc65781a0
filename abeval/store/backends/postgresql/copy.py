"""The bulk path to a PostgreSQL store: the local DuckDB writes the staged rows
as CSV and the server reads them with ``COPY``, then inserts those it does not
hold yet."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.ingest.keys import KEYS, add_keys, key_joins
from abeval.store.ingest.repeats import KEY, differs
from abeval.store.ingest.staging import EVENT_COLUMNS
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def insert_via_copy(conn: Connection, duck: Any, fresh: str, ingest_id: int, file: str) -> int:
    """Bulk path for PostgreSQL: DuckDB writes CSV, the server reads it with COPY.

    A row whose ``event_id`` the store holds with different content stops the
    load (an :class:`InputError` naming it): the rows are compared here, on the
    server, after the staged load has set aside the file's bad rows."""
    from sqlalchemy import text

    cols = ", ".join(EVENT_COLUMNS)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stage.csv")
        duck.execute(
            f"COPY ({fresh}) TO {quote_literal(out)} (FORMAT csv, HEADER false, "
            "TIMESTAMPFORMAT '%Y-%m-%d %H:%M:%S.%f')"
        )
        conn.execute(
            text(
                f"CREATE TEMP TABLE abeval_stage ON COMMIT DROP AS SELECT {cols} FROM events "
                "WITH NO DATA"
            )
        )
        raw = conn.connection.driver_connection
        assert raw is not None
        with (
            raw.cursor() as cur,
            open(out, "rb") as f,
            cur.copy(f"COPY abeval_stage ({cols}) FROM STDIN (FORMAT csv)") as copy,
        ):
            while chunk := f.read(1 << 20):
                copy.write(chunk)
    # Without statistics the planner takes the staged table for a few rows and
    # compares every pair below in a nested loop.
    conn.execute(text("ANALYZE abeval_stage"))
    # An aggregate, not LIMIT 1: the planner takes most joined rows for clashes
    # (eleven IS DISTINCT FROM in an OR), and under LIMIT 1 it chose a nested loop
    # to stop at the first; a file whose rows the store already holds unchanged has
    # none, and every pair was compared (a 200k-event file ingested twice did not
    # finish). An aggregate reads the whole join, so it is hashed.
    joined = (
        "FROM abeval_stage s JOIN events e "
        f"ON e.experiment = s.experiment AND e.event_id = s.event_id WHERE {differs('e', 's')}"
    )
    first = conn.execute(text(f"SELECT MIN(s.event_id) {joined}")).scalar()
    clash = None
    if first is not None:
        clash = conn.execute(
            text(f"SELECT s.event_id, MIN(e.ingest_id) {joined} AND s.event_id = :id GROUP BY 1"),
            {"id": first},
        ).fetchone()
    if clash is not None:
        raise InputError(
            f"{file}: event_id {clash[0]!r} is already in the store (ingest {clash[1]}) with "
            "different content; give each event its own event_id (nothing was loaded from "
            "this file)"
        )
    # The rows go in with their integer keys, joined from the dictionaries after the
    # file's new keys are added there: numbering them after the insert would write
    # every row twice (an UPDATE writes a new version of each row).
    add_keys(lambda s: conn.execute(text(s)), "abeval_stage")
    numbers, joins = key_joins("s")
    staged = ", ".join(f"s.{c}" for c in EVENT_COLUMNS)
    result = conn.execute(
        text(
            f"INSERT INTO events ({cols}, ingest_id, {', '.join(k.number for k in KEYS)}) "
            f"SELECT {staged}, :ingest_id, {numbers} FROM abeval_stage s {joins} "
            "WHERE NOT EXISTS (SELECT 1 FROM events e "
            "WHERE e.experiment = s.experiment "
            f"AND {KEY.format(t='e.')} = {KEY.format(t='s.')})"
        ),
        {"ingest_id": ingest_id},
    )
    inserted = int(result.rowcount)
    if inserted:
        # The planner's statistics of what was just written: until autovacuum gets
        # to them (minutes, or never for a store read right after its ingest) the
        # planner takes `events` for a few hundred rows, and the report's off-policy
        # click match ran as a nested loop (233 s instead of 0.3 s at 200k events,
        # benchmarks/bench_postgres.py). ANALYZE samples a bounded number of rows.
        for table in ("events", *(k.table for k in KEYS)):
            conn.execute(text(f"ANALYZE {table}"))
    return inserted
