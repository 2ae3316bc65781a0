"""The step estimators (``rips``, ``snrips``, ``sips``, ``cascade_dr``: window
products over positions, a cross-fitted click model) on a Spark cluster equal
DuckDB's to a relative 1e-9, on ranked logs that carry ``propensity_given_above``
(abeval.simulate.ranked) with the target's step probabilities from a file.

The report tests' simulated events log no step probabilities, so only these
logs reach the SQL of abeval.store.sql.ope_cascade on Spark.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_tables import drop_abeval_tables
from test_postgres_report import assert_same
from typer.testing import CliRunner

from abeval.analysis.ope import OpeOptions, ope_results
from abeval.cli import app
from abeval.simulate.ranked import event_rows, example_world, impressions, target_rows
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.spark
EXP = "ranked"


def test_the_step_estimators_agree_with_duckdb(
    spark_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = example_world("cascade", seed=3)
    rng = np.random.default_rng(5)
    logs = pd.concat(
        [impressions(world, rng, "control", 120), impressions(world, rng, "treatment", 30, True)]
    )
    events, file = tmp_path / "events.csv", tmp_path / "target.csv"
    event_rows(logs, EXP).to_csv(events, index=False)
    target_rows(world, logs[logs.arm == "control"], "treatment").to_csv(file, index=False)
    duck = str(tmp_path / "s.duckdb")
    with open_store(duck) as store:
        ingest_file(store, events)
    drop_abeval_tables(spark_url)
    monkeypatch.setenv("ABEVAL_SPARK_WAREHOUSE", str(tmp_path / "warehouse"))
    result = CliRunner().invoke(app, ["ingest", str(events), "--quiet", "--db", spark_url])
    assert result.exit_code == 0, result.output
    docs = []
    for db in (duck, spark_url):
        with open_store(db, read_only=True) as store, store.connect() as conn:
            options = OpeOptions(target_propensities=str(file))
            section = ope_results(conn, EXP, "control", ["treatment"], options, 0.05)
        docs.append(section.to_dict())
    by = {e["estimator"]: e for d in docs[0]["directions"] for e in d["estimates"]}
    assert {"rips", "snrips", "sips", "cascade_dr"} <= set(by)
    assert all(by[n]["ctr"]["value"] > 0 for n in ("rips", "snrips", "sips", "cascade_dr"))
    assert_same(docs[0], docs[1])
