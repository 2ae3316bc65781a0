"""PostgreSQL: temporary tables in ``pg_temp`` analysed once filled, rows from
Python sent by ``COPY``, JSON built by ``json_build_object``, tables described
from the catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.backends.base import Backend, cannot_read, driver_reason
from abeval.store.schema import Column

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.source_sql import Relation


class PostgresBackend(Backend):
    temporary_tables = True

    def __init__(self) -> None:
        super().__init__("postgresql")

    def owns_url(self, url: str) -> bool:
        return url.startswith("postgresql")

    def temporary_name(self, view: str) -> str:
        return f"pg_temp.{view}"

    def json_object(self, pairs: str) -> str:
        return f"json_build_object({pairs})"

    def json_keys_sql(self, objects: str) -> str | None:
        return f"SELECT DISTINCT json_object_keys(CAST(a AS JSON)) FROM {objects}"

    def describe(self, conn: Connection, rel: Relation) -> dict[str, str]:
        from sqlalchemy import text

        try:
            with conn.begin_nested():
                rows = conn.execute(
                    text(
                        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) "
                        "FROM pg_attribute a WHERE a.attrelid = to_regclass(:t) "
                        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
                    ),
                    {"t": rel.sql},
                ).fetchall()
        except Exception as exc:
            raise cannot_read(rel, driver_reason(exc)) from None
        if not rows:
            raise InputError(
                f"no table or view {rel.shown} in the store's database ({{table}}); "
                "name it as SCHEMA.TABLE, as `\\dt` in psql lists it",
                parameters=("table",),
            )
        return {str(r[0]): str(r[1]) for r in rows}

    def wait_briefly(self, conn: Connection) -> None:
        from sqlalchemy import text

        conn.execute(text("SET LOCAL lock_timeout = '2s'"))

    def analyze_temporary(self, conn: Connection, table: str) -> None:
        # Fresh temporary tables have no statistics: without them the planner
        # picks nested loops over them.
        from sqlalchemy import text

        conn.execute(text(f"ANALYZE {table}"))

    def insert_staged(
        self, conn: Connection, duck: Any, fresh: str, ingest_id: int, file: str
    ) -> int:
        """DuckDB writes the rows as CSV, the server reads them with ``COPY``
        (:func:`abeval.store.backends.postgresql.copy.insert_via_copy`)."""
        from abeval.store.backends.postgresql.copy import insert_via_copy

        return insert_via_copy(conn, duck, fresh, ingest_id, file)

    def load_rows(
        self,
        conn: Connection,
        table: str,
        columns: Sequence[Column],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        self.create_temporary(conn, table, columns)
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
