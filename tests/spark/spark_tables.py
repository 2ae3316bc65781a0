"""Put a DuckDB store's tables into a Spark cluster's catalog, as Parquet.

Test scaffolding until ``abeval ingest --db sc://...`` exists: DuckDB writes each
table the report reads as one Parquet file under the warehouse, and Spark
registers it with ``CREATE TABLE ... USING parquet LOCATION``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abeval.store.spark.store import TABLES


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
