"""The backend contract of tests/store/test_backends.py on a Spark store: the same rows
from Python, the same NULLs filled, the same JSON object as on DuckDB, PostgreSQL
and SQLite, and the keys of JSON texts read in Python (Spark's backend gives no
query for them)."""

from __future__ import annotations

import pytest
from test_backends import check_json_objects_and_their_keys, check_rows_load_and_fill

from abeval.store import open_store
from abeval.store.backends.spark.backend import SparkBackend

pytestmark = pytest.mark.spark


def test_sparks_backend_meets_the_contract(spark: str) -> None:
    with open_store(spark) as store, store.connect() as conn:
        assert isinstance(store.backend, SparkBackend)
        check_rows_load_and_fill(conn)
        check_json_objects_and_their_keys(conn, keys_in_sql=False)
