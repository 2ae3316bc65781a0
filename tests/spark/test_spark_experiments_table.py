"""The versions of the Spark ``experiments`` table and the statement that changes one
experiment's settings (abeval.store.backends.spark.experiments_table), without a cluster;
tests/spark/test_spark_config.py runs them on one, and checks which old versions
are dropped."""

from __future__ import annotations

from datetime import datetime

import pytest

from abeval.store.backends.spark import experiments_table as t
from abeval.store.backends.spark.schema import COLUMNS


def test_a_version_is_numbered_from_its_folder() -> None:
    assert t.number("s3a://b/wh/experiments/v0") == 0
    assert t.number("/wh/experiments/v12-0a1b2c3d") == 12  # an earlier abeval's folder
    assert t.number("file:/wh/db/experiments__v13_0a1b2c3d/") == 13


def test_only_the_given_columns_of_the_one_experiment_change() -> None:
    when = datetime(2024, 5, 9)
    sql, params = t.change_settings_sql(
        {"control_arm": "control", "window_from": when, "split": None}
    )
    columns = [c for c, _ in COLUMNS["experiments"]]
    selected = sql.removeprefix("SELECT ").removesuffix(" FROM experiments").split(", ")
    assert len(selected) == len(columns)
    changed = {c: s for c, s in zip(columns, selected, strict=True) if s != c}
    i, j = columns.index("control_arm"), columns.index("window_from")
    assert changed == {
        "control_arm": f"CASE WHEN experiment = :e THEN :v{i} ELSE control_arm END AS control_arm",
        "split": "CASE WHEN experiment = :e THEN NULL ELSE split END AS split",
        "window_from": f"CASE WHEN experiment = :e THEN :v{j} ELSE window_from END AS window_from",
    }
    assert params == {f"v{i}": "control", f"v{j}": when}


def test_an_unknown_column_is_refused() -> None:
    with pytest.raises(ValueError, match="no such column of experiments: colour"):
        t.change_settings_sql({"colour": "red"})
