"""Target probabilities recorded on a Spark store (``abeval experiment set X
--target-propensities FILE --db sc://...``) and abeval's own tables replaced by a
pointer swap (abeval.store.backends.spark.own_tables).

One small store holds two experiments of ranked logs (abeval.simulate.ranked,
with step probabilities), loaded into DuckDB and into Spark. The same file is
recorded in both: the line the command prints is DuckDB's, and the off-policy
section built with no flag reads the recorded rows and equals DuckDB's to a
relative 1e-9. The refusals (coverage under half, another experiment's file, a
bad row) are DuckDB's lines, and the Spark tables stay as they were. A write
that fails in the middle of its job leaves the previous version readable and
no new version behind; the next write drops the old versions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from abeval.store.backends.spark import own_tables
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.spark
runner = CliRunner()
EXP, OTHER = "ranked", "other"
TABLES = ("target_propensities", "target_files")


@dataclass(frozen=True)
class Stores:
    duck: str
    spark: str
    folder: Path
    target: Path  # EXP's target file (treatment's probabilities for control's requests)
    partial: Path  # the same for the first 30% of control's requests
    foreign: Path  # OTHER's target file


def _prefixed(logs: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return logs.assign(user=prefix + logs["user"].astype(str), request=prefix + logs["request"])


@pytest.fixture(scope="module")
def stores(spark_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    folder = tmp_path_factory.mktemp("spark-targets")
    world = example_world("cascade", seed=3)
    rng = np.random.default_rng(5)
    logs = {
        name: _prefixed(
            pd.concat(
                [impressions(world, rng, "control", 80), impressions(world, rng, "treatment", 20)]
            ),
            prefix,
        )
        for name, prefix in ((EXP, "r"), (OTHER, "o"))
    }
    events = folder / "events.csv"
    pd.concat([event_rows(logs[x], x) for x in (EXP, OTHER)]).to_csv(events, index=False)
    control = {x: logs[x][logs[x].arm == "control"] for x in logs}
    files = {
        "target": target_rows(world, control[EXP], "treatment"),
        "partial": target_rows(
            world, control[EXP].iloc[: 3 * (len(control[EXP]) // 10)], "treatment"
        ),
        "foreign": target_rows(world, control[OTHER], "treatment"),
    }
    for name, rows in files.items():
        rows.to_csv(folder / f"{name}.csv", index=False)
    duck = str(folder / "s.duckdb")
    with open_store(duck) as store:
        ingest_file(store, events)
    drop_abeval_tables(spark_url)
    _drop_targets(spark_url)
    mp = pytest.MonkeyPatch()
    mp.setenv("ABEVAL_SPARK_WAREHOUSE", str(folder / "warehouse"))
    try:
        result = runner.invoke(app, ["ingest", str(events), "--quiet", "--db", spark_url])
        assert result.exit_code == 0, result.output
        yield Stores(
            duck,
            spark_url,
            folder,
            *(folder / f"{n}.csv" for n in ("target", "partial", "foreign")),
        )
    finally:
        mp.undo()
        _drop_targets(spark_url)


def _session(url: str) -> Any:
    from pyspark.sql.connect.session import SparkSession

    return SparkSession.builder.remote(url).create()


def _drop_targets(url: str) -> None:
    session = _session(url)
    try:
        for table in TABLES:
            own_tables.drop(session, table)
    finally:
        session.stop()


def _state(url: str) -> dict[str, Any]:
    """Per table: the version the view reads, every version table, and the rows."""
    session = _session(url)
    try:
        out = {}
        for table in TABLES:
            rows = (
                session.sql(f"SELECT * FROM {table}").collect()
                if own_tables.current(session, table)
                else []
            )
            out[table] = (
                own_tables.current(session, table),
                own_tables.versions(session, table),
                sorted(tuple(str(v) for v in r) for r in rows),
            )
        return out
    finally:
        session.stop()


def _set(db: str, path: Path) -> Any:
    return runner.invoke(
        app, ["experiment", "set", EXP, "--db", db, "--target-propensities", str(path)]
    )


def _ope(db: str) -> dict[str, Any]:
    with open_store(db, read_only=True) as store, store.connect() as conn:
        section = ope_results(conn, EXP, "control", ["treatment"], OpeOptions(), 0.05)
    return section.to_dict()


def test_recorded_probabilities_are_used_with_no_flag_and_equal_duckdbs(stores: Stores) -> None:
    said = []
    for db in (stores.duck, stores.spark):
        result = _set(db, stores.target)
        assert result.exit_code == 0, result.output
        said.append(result.stderr)
    assert said[0] == said[1]
    assert said[1].startswith(f"{EXP}: target probabilities recorded from {stores.target}: ")
    docs = [_ope(db) for db in (stores.duck, stores.spark)]
    assert docs[1]["target_origin"] == "recorded" and docs[1]["file"] == str(stores.target)
    by = {e["estimator"]: e for d in docs[1]["directions"] for e in d["estimates"]}
    assert {"snips", "rips", "cascade_dr"} <= set(by)
    assert all(by[n]["ctr"]["value"] > 0 for n in ("snips", "rips", "cascade_dr"))
    for doc in docs:  # recorded a second apart at most
        doc.pop("recorded_at", None)
    assert_same(docs[0], docs[1])
    # one version of each table, and the view reads it
    state = _state(stores.spark)
    for table in TABLES:
        version, versions, _ = state[table]
        assert versions == [version]


@pytest.mark.parametrize("bad", ["partial", "foreign", "row"])
def test_a_refused_file_is_duckdbs_line_and_changes_nothing(stores: Stores, bad: str) -> None:
    if _state(stores.spark)["target_files"][0] is None:
        assert _set(stores.spark, stores.target).exit_code == 0
    path = stores.folder / "bad-row.csv"
    if bad == "row":
        path.write_text("request_id,item_id,position,probability\nr0-0,i0,1,1.5\n")
    else:
        path = getattr(stores, bad)
    before = _state(stores.spark)
    lines = []
    for db in (stores.duck, stores.spark):
        result = _set(db, path)
        assert (result.exit_code, result.stdout) == (1, ""), result.output
        lines.append(result.stderr)
    assert lines[0] == lines[1] and len(lines[1].splitlines()) == 1
    assert lines[1].startswith(f"Error: {path}")
    assert _state(stores.spark) == before


def test_a_write_failing_mid_job_leaves_the_table_as_it_was(stores: Stores) -> None:
    """A row that fails while Spark writes the new version (``raise_error``): the
    view still reads the previous version, no new version is left, and the next
    write that succeeds drops the old one."""
    if _state(stores.spark)["target_files"][0] is None:
        assert _set(stores.spark, stores.target).exit_code == 0
    before = _state(stores.spark)
    failing = (
        "SELECT experiment, arm, request_id, item_id, CASE WHEN position = 3 THEN "
        "CAST(raise_error('a row fails mid-job') AS INT) ELSE position END AS position, "
        "probability, probability_given_above FROM target_propensities"
    )
    session = _session(stores.spark)
    try:
        with pytest.raises(Exception, match="a row fails mid-job"):
            own_tables.publish(session, "target_propensities", session.sql(failing))
    finally:
        session.stop()
    assert _state(stores.spark) == before
    # the same rows again, committed: a new version, the old one dropped
    with open_store(stores.spark) as store, store.own_tables() as conn:
        own_tables.write_query(conn, "target_propensities", "SELECT * FROM target_propensities", {})
    version, versions, rows = _state(stores.spark)["target_propensities"]
    old_version, _, old_rows = before["target_propensities"]
    assert versions == [version] and version != old_version and rows == old_rows
