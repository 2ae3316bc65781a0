"""The bulk path to a PostgreSQL store: the local DuckDB writes the staged rows
as CSV and the server reads them with ``COPY``, then inserts those it does not
hold yet."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

from abeval.store.ingest.repeats import KEY
from abeval.store.ingest.staging import EVENT_COLUMNS
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def insert_via_copy(conn: Connection, duck: Any, fresh: str, ingest_id: int) -> int:
    """Bulk path for PostgreSQL: DuckDB writes CSV, the server reads it with COPY."""
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
    result = conn.execute(
        text(
            f"INSERT INTO events ({cols}, ingest_id) SELECT {cols}, :ingest_id "
            "FROM abeval_stage s WHERE NOT EXISTS (SELECT 1 FROM events e "
            "WHERE e.experiment = s.experiment "
            f"AND {KEY.format(t='e.')} = {KEY.format(t='s.')})"
        ),
        {"ingest_id": ingest_id},
    )
    return int(result.rowcount)
