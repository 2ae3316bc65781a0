"""The agreement board on a Spark cluster equals DuckDB's, with the offline
evaluations recorded on Spark by ``abeval evaluate --experiment X --db sc://...``.

A small simulated history (abeval.simulate.series: three experiments, with
held-out files) is ingested into DuckDB; its tables are written as Parquet and
registered in the cluster's catalog (tests/spark/spark_tables.py). Each
experiment's evaluation is recorded by the CLI into both stores (on Spark into
the ``offline_evaluations`` Parquet table it creates), then the board (recorded
evaluations, off-policy estimates, replayed metrics) must agree to a relative
1e-9 (tests/store/test_postgres_report.py's assert_same). Each Spark query costs about
a second, so the history is kept small.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any

import pytest
from spark_tables import export_tables, register_tables
from test_postgres_report import assert_same
from typer.testing import CliRunner

from abeval.analysis.agreement import AgreementOptions
from abeval.analysis.agreement_board import agreement_board
from abeval.cli import app
from abeval.simulate.series import ExperimentFiles, SeriesConfig, write_series
from abeval.store import open_store
from abeval.store.backends.spark import own_tables
from abeval.store.evaluations import latest_evaluations
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.spark
runner = CliRunner()
HISTORY = SeriesConfig(
    experiments=3,
    seed=5,
    heldout_users=300,
    base=replace(SeriesConfig().base, users=300, pre_period_days=0),
)


@pytest.fixture(scope="module")
def history(
    spark_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, list[ExperimentFiles]]]:
    """(DuckDB store, Spark URL, the experiments' files): the same history in both."""
    from pyspark.sql.connect.session import SparkSession

    folder = tmp_path_factory.mktemp("spark-agreement")
    files = write_series(folder / "series", HISTORY)
    duck = folder / "history.duckdb"
    with open_store(str(duck)) as store:
        for f in files:
            ingest_file(store, f.events)
    folders = export_tables(duck, folder / "warehouse", "default")
    session = SparkSession.builder.remote(spark_url).create()
    try:
        register_tables(session, "default", folders)
        own_tables.drop(session, "offline_evaluations")
        yield str(duck), spark_url, files
    finally:
        own_tables.drop(session, "offline_evaluations")
        session.stop()


def _record(f: ExperimentFiles, db: str) -> None:
    recs = [f"{arm}={path}" for arm, path in f.recommendations.items()]
    args = ["evaluate", "--truth", str(f.truth), "--experiment", f.experiment.name, "--db", db]
    result = runner.invoke(app, [*args, *(x for r in recs for x in ("-r", r)), "--format", "json"])
    assert result.exit_code == 0, result.output


def _recorded(db: str) -> dict[str, Any]:
    with open_store(db, read_only=True) as store:
        found = latest_evaluations(store)
    # evaluate's means are DuckDB sums in parallel: equal to 1e-9 from run to run
    return {
        name: [dict(e.conventions), dict(e.fingerprints), [asdict(m) for m in e.metrics]]
        for name, e in found.items()
    }


def test_the_board_with_evaluations_recorded_on_spark_equals_duckdbs(
    history: tuple[str, str, list[ExperimentFiles]],
) -> None:
    duck, spark, files = history
    with open_store(spark, read_only=True) as store:
        assert latest_evaluations(store) == {}  # no table yet: none recorded
    for db in (duck, spark):
        for f in files:
            _record(f, db)
    _record(files[0], spark)  # the same evaluation again replaces it
    recorded = _recorded(duck)
    assert sorted(recorded) == [f.experiment.name for f in files]
    assert_same(recorded, _recorded(spark))
    with open_store(spark, read_only=True) as store, store.connect() as conn:
        from sqlalchemy import text

        rows = conn.execute(text("SELECT COUNT(*) FROM offline_evaluations")).scalar()
    assert rows == sum(len(e[2]) for e in recorded.values())
    # the series logs personalised propensities: OPE needs the target's probabilities
    targets = {f.experiment.name: str(f.target_propensities) for f in files}
    options = AgreementOptions(resamples=300, seed=1, target_propensities=targets)
    boards = []
    for db in (duck, spark):
        with open_store(db, read_only=True) as store:
            boards.append(agreement_board(store, options).to_dict())
    a, b = boards
    assert a["experiments_with_signals"] == 3 and a["experiments_skipped"] == []
    assert {p["source"] for p in a["pairs"]} == {"evaluation", "ope", "replay"}
    assert b["store"] == spark
    assert_same(a, b)
