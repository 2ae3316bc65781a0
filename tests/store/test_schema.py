"""abeval's one description of its tables (abeval.store.schema) is what the
migrations make: every table of a migrated store, its columns in order, their
types, which may be NULL and which make the primary key, on DuckDB and on
PostgreSQL; and what follows from it (Spark's DDL, the writers' column lists)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from sqlalchemy import create_engine, text

from abeval.store import open_store
from abeval.store.schema import OWN_TABLES, TABLES, Table

#: How DuckDB's DESCRIBE names each kind of column.
DUCKDB_NAMES = {
    "text": "VARCHAR",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "timestamp": "TIMESTAMP",
}
#: How PostgreSQL's information_schema names them.
POSTGRES_NAMES = {
    "text": "text",
    "integer": "integer",
    "bigint": "bigint",
    "double": "double precision",
    "timestamp": "timestamp without time zone",
}


def _expected(table: Table, names: dict[str, str]) -> list[tuple[str, str, bool, bool]]:
    return [(c.name, names[c.kind], c.nullable, c.key) for c in table.columns]


def test_a_migrated_duckdb_store_has_exactly_the_described_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with open_store(str(path)):
        pass  # the migrations ran
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert tables == set(TABLES)
        for name, table in TABLES.items():
            described = [
                (r[0], r[1], r[2] == "YES", r[3] == "PRI")
                for r in con.execute(f"DESCRIBE {name}").fetchall()
            ]
            assert described == _expected(table, DUCKDB_NAMES), name
    finally:
        con.close()


@pytest.mark.postgres
def test_a_migrated_postgres_store_has_exactly_the_described_tables(
    postgres_database: str,
) -> None:
    with open_store(postgres_database):
        pass
    engine = create_engine(postgres_database)
    try:
        with engine.connect() as conn:
            tables = {
                str(r[0])
                for r in conn.execute(
                    text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
                )
            }
            assert tables == set(TABLES)
            for name, table in TABLES.items():
                keys = {
                    str(r[0])
                    for r in conn.execute(
                        text(
                            "SELECT k.column_name FROM information_schema.table_constraints c "
                            "JOIN information_schema.key_column_usage k "
                            "ON k.constraint_name = c.constraint_name "
                            "AND k.table_name = c.table_name "
                            "WHERE c.table_name = :t AND c.constraint_type = 'PRIMARY KEY'"
                        ),
                        {"t": name},
                    )
                }
                described = [
                    (str(r[0]), str(r[1]), r[2] == "YES", str(r[0]) in keys)
                    for r in conn.execute(
                        text(
                            "SELECT column_name, data_type, is_nullable "
                            "FROM information_schema.columns WHERE table_name = :t "
                            "AND table_schema = current_schema() ORDER BY ordinal_position"
                        ),
                        {"t": name},
                    )
                ]
                assert described == _expected(table, POSTGRES_NAMES), name
    finally:
        engine.dispose()


def test_spark_and_the_writers_take_their_columns_from_the_description() -> None:
    from abeval.store import evaluations
    from abeval.store.backends.spark.own_tables import TABLES as SPARK_OWN
    from abeval.store.backends.spark.schema import COLUMNS, PARTITION

    spark = {"STRING": "text", "INT": "integer", "BIGINT": "bigint", "DOUBLE": "double"}
    spark["TIMESTAMP_NTZ"] = "timestamp"
    for name, columns in COLUMNS.items():
        described = [(c.name, c.kind) for c in TABLES[name].columns]
        assert sorted((n, spark[t]) for n, t in columns) == sorted(described), name
        if name in ("events", "ingests"):
            assert columns[-1][0] == PARTITION  # Spark keeps the partition column last
    for name in OWN_TABLES:
        got = [(n, spark[t]) for n, t in SPARK_OWN[name].items()]
        assert got == [(c.name, c.kind) for c in TABLES[name].columns], name
    assert tuple(c.name for c in TABLES["offline_evaluations"].columns) == evaluations._COLUMNS


def test_a_column_the_description_cannot_read_is_refused() -> None:
    from abeval.store.schema import _table

    assert _table("t", "a text key\nb double").columns[0].nullable is False
    with pytest.raises(ValueError, match="cannot read column 'b float'"):
        _table("t", "a text key\nb float")
    with pytest.raises(ValueError, match="cannot read column"):
        _table("t", "a text primary")
