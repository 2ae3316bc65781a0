"""abeval's tables on the test cluster: dropped before a test loads its own, or
put there from a DuckDB store as Parquet.

The report tests load their data with ``abeval ingest --db sc://...``;
:func:`export_tables` and :func:`register_tables` remain for tests that need
tables abeval did not create (DuckDB writes each table as one Parquet file,
Spark registers it with ``CREATE TABLE ... USING parquet LOCATION``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abeval.store.backends.spark.database import TABLES


def drop_abeval_tables(url: str) -> None:
    """Drop ``events``, ``ingests``, ``experiments`` and ``rejected_rows`` of the
    current database (their files stay: abeval creates them as external tables)."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        for table in ("events", "ingests", "experiments", "rejected_rows"):
            session.sql(f"DROP TABLE IF EXISTS {table}").collect()
    finally:
        session.stop()


def export_tables(store_path: Path, warehouse: Path, database: str) -> dict[str, Path]:
    """Write the store's ``events``, ``experiments`` and ``ingests`` as Parquet
    folders ``warehouse/database/<table>/``; return them by table."""
    import duckdb

    folders = {}
    con = duckdb.connect(str(store_path), read_only=True)
    try:
        for table in TABLES:
            folder = warehouse / database / table
            folder.mkdir(parents=True)
            con.execute(f"COPY {table} TO '{folder / 'part-0.parquet'}' (FORMAT parquet)")
            folders[table] = folder
    finally:
        con.close()
    return folders


def register_tables(session: Any, database: str, folders: dict[str, Path]) -> None:
    """``CREATE TABLE database.<table> USING parquet LOCATION <folder>`` for each."""
    session.sql(f"CREATE DATABASE IF NOT EXISTS {database}").collect()
    for table, folder in folders.items():
        session.sql(f"DROP TABLE IF EXISTS {database}.{table}").collect()
        session.sql(f"CREATE TABLE {database}.{table} USING parquet LOCATION '{folder}'").collect()
