"""The SQL types of abeval's columns on Spark."""

from __future__ import annotations

#: Spark's names of abeval's kinds of column (:data:`abeval.store.schema.PORTABLE_TYPES`).
SPARK_TYPES = {
    "text": "STRING",
    "integer": "INT",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "timestamp": "TIMESTAMP_NTZ",  # zone-less, as DuckDB's TIMESTAMP
}
