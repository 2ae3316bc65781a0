"""The saved configuration and team-defined metrics on a Spark store, against DuckDB.

One small log with team event types (``add_to_cart``, ``play``; tests/team_log.py)
is ingested into DuckDB and, with ``abeval ingest --db sc://...``, into the
cluster. Every command then runs on both stores and must say the same: ``metrics
add`` and ``metrics``; ``experiment set`` with control, window and the whole
configuration (team metrics as primary, secondary and guardrail with a margin,
a cap, CUPED days, target MDE, alpha, correction, plan), ``experiment show``
(text and JSON), ``experiment unset``; the refusals (one line, the same exit
code, and the Spark table still at the version it was); and ``report`` reading
the record, team metrics in every role with a cap and CUPED (numbers to a
relative 1e-9, and per setting the same source). ``power``, ``agreement`` and
``forecast`` read the record through the same code (tests/api/test_agreement_config.py,
tests/cli/test_experiment_config_cli.py); one report keeps the added Spark time
small. Old versions of ``experiments`` are dropped, but the live one and the one before it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from history_files import _write
from spark_tables import drop_abeval_tables
from team_log import EXP, METRICS_TOML, team_log
from test_postgres_report import assert_same
from typer.testing import CliRunner

from abeval.cli import app
from abeval.store.backends.spark import experiments_table

pytestmark = pytest.mark.spark
TEAM = ("mobile_plays", "capped_value")
EXP_T = experiments_table.TABLE
runner = CliRunner()

RECORDED = [
    *("--control", "control", "--from", "2024-05-09", "--to", "2024-05-16"),
    *("--primary", "cart_rate,value_per_cart", "--secondary", "carts"),
    *("--guardrails", "mobile_plays:5%,cart_value", "--cap", "cart_value=0.95"),
    *("--cuped-days", "3", "--target-mde", "0.1", "--alpha", "0.1"),
    *("--correction", "bh", "--plan-users", "80", "--plan-days", "7"),
]


@dataclass(frozen=True)
class Stores:
    duck: str
    spark: str
    folder: Path


@pytest.fixture(scope="module")
def stores(spark_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    folder = tmp_path_factory.mktemp("spark-config")
    events = _write(folder / "events.csv", team_log())
    (folder / "metrics.toml").write_text(METRICS_TOML)
    duck = str(folder / "s.duckdb")
    drop_abeval_tables(spark_url)
    _drop_definitions(spark_url)
    mp = pytest.MonkeyPatch()
    mp.setenv("ABEVAL_SPARK_WAREHOUSE", str(folder / "warehouse"))
    try:
        for db in (duck, spark_url):
            said = runner.invoke(app, ["ingest", str(events), "--quiet", "--db", db])
            assert said.exit_code == 0, said.output
        yield Stores(duck, spark_url, folder)
    finally:
        mp.undo()
        _drop_definitions(spark_url)


def _drop_definitions(url: str) -> None:
    from pyspark.sql.connect.session import SparkSession

    from abeval.store.backends.spark import own_tables

    session = SparkSession.builder.remote(url).create()
    try:
        own_tables.drop(session, "metric_definitions")
    finally:
        session.stop()


def _live(url: str) -> str:
    """The folder the Spark ``experiments`` table reads."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        return experiments_table.location(session)
    finally:
        session.stop()


def _both(s: Stores, *args: str) -> tuple[Any, Any]:
    """The command's result on DuckDB and on Spark, the store's name made the same,
    and so the clock time a plan was recorded at (``plan_recorded.recorded_at``: the
    two stores record it seconds apart; the data's own times are from 2024)."""
    today = re.compile(datetime.now(UTC).strftime("%Y-%m-%d") + r"[T ]\d\d:\d\d:\d\d")
    out = []
    for db in (s.duck, s.spark):
        result = runner.invoke(app, [*args, "--db", db])
        out.append(
            tuple(
                today.sub("RECORDED", text) if isinstance(text, str) else text
                for text in (
                    result.exit_code,
                    result.stdout.replace(db, "STORE"),
                    result.stderr.replace(db, "STORE"),
                )
            )
        )
    return out[0], out[1]


def test_metrics_add_records_the_team_metrics_on_spark(stores: Stores) -> None:
    duck, spark = _both(stores, "metrics", "add", str(stores.folder / "metrics.toml"))
    assert duck[0] == 0 and spark == duck
    duck, spark = _both(stores, "metrics", "-f", "json")
    a, b = json.loads(duck[1]), json.loads(spark[1])
    recorded = [m["name"] for m in b if not m["builtin"]]
    assert recorded == sorted(("cart_rate", "carts", "cart_value", "value_per_cart", *TEAM))
    assert all(m.pop("recorded_at", None) for x in (a, b) for m in x if not m["builtin"])
    assert b == a


def test_experiment_set_records_the_configuration_on_spark(stores: Stores) -> None:
    before = _live(stores.spark)
    duck, spark = _both(stores, "experiment", "set", EXP, *RECORDED)
    assert duck[0] == 0 and "recorded" in duck[2]
    assert spark == duck
    assert experiments_table.number(_live(stores.spark)) == experiments_table.number(before) + 1
    for fmt in ("text", "json"):
        duck, spark = _both(stores, "experiment", "show", EXP, "-f", fmt)
        assert duck[0] == 0 and spark == duck
    shown = json.loads(spark[1])
    assert shown["config"]["guardrails"] == [
        {"metric": "mobile_plays", "margin": 0.05},
        {"metric": "cart_value", "margin": None},
    ]
    assert shown["control"] == "control" and shown["config"]["plan_users"] == 80


@pytest.mark.parametrize(
    "args",
    [
        ["--guardrails", "mobile_plays:lots"],
        ["--primary", "cart_rat"],
        ["--plan-users", "0"],
        ["--control", "contrl", "--primary", "carts"],
        ["--split", "control=1,other=1", "--alpha", "0.2"],
        ["--from", "2024-05-20", "--alpha", "0.2"],
    ],
)
def test_a_refused_setting_is_the_same_line_and_records_nothing(
    stores: Stores, args: list[str]
) -> None:
    before = _live(stores.spark)
    duck, spark = _both(stores, "experiment", "set", EXP, *args)
    assert duck[0] != 0 and duck[2].startswith("Error: ") and duck[2].count("\n") == 1
    assert spark == duck
    assert _live(stores.spark) == before  # no new version: nothing half-recorded


def test_the_report_reads_the_record_as_on_duckdb(stores: Stores) -> None:
    duck, spark = _both(stores, "report", "-e", EXP, "-f", "json", "--no-offline")
    assert duck[0] == 0 and spark[0] == 0, spark
    a, b = json.loads(duck[1]), json.loads(spark[1])
    roles = {(m["metric"], m["role"]) for m in b["metrics"]}
    assert {("cart_rate", "primary"), ("value_per_cart", "primary")} <= roles
    assert {("carts", "secondary"), ("mobile_plays", "guardrail")} <= roles
    assert set(b["settings"]["sources"].values()) == {"record"}
    assert b["settings"]["margins"] == {"mobile_plays": 0.05}
    assert [c["metrics"] for c in b["caps"]] == [["capped_value"], ["cart_value"]]
    value = next(m for m in b["metrics"] if m["metric"] == "cart_value")
    assert value["comparison"]["absolute"]["effect"] != value["unadjusted"]["absolute"]["effect"]
    assert_same(a, b)


def test_experiment_unset_forgets_on_spark(stores: Stores) -> None:
    duck, spark = _both(stores, "experiment", "unset", EXP, "--guardrails", "--control", "--window")
    assert duck[0] == 0 and spark == duck
    duck, spark = _both(stores, "experiment", "show", EXP, "-f", "json")
    shown = json.loads(spark[1])
    assert "guardrails" not in shown["config"] and shown["control"] is None
    assert shown["config"]["primary"] == ["cart_rate", "value_per_cart"]
    assert spark == duck


def test_old_versions_are_dropped_but_the_live_one_and_the_one_before(stores: Stores) -> None:
    from pyspark.sql.connect.session import SparkSession

    from abeval.store.backends.spark import own_tables

    for alpha in ("0.2", "0.3", "0.25"):
        args = ["experiment", "set", EXP, "--alpha", alpha, "--db", stores.spark]
        said = runner.invoke(app, args)
        assert said.exit_code == 0, said.output
    session = SparkSession.builder.remote(stores.spark).create()
    try:
        live = experiments_table.location(session)
        kept = {experiments_table.location(session, v) for v in own_tables.versions(session, EXP_T)}
        alpha = session.sql("SELECT config FROM experiments").collect()[0][0]
    finally:
        session.stop()
    assert json.loads(alpha)["alpha"] == 0.25
    assert live in kept and len(kept) == 2
    assert sorted(experiments_table.number(f) for f in kept) == [
        experiments_table.number(live) - 1,
        experiments_table.number(live),
    ]
    # the dropped versions' folders are gone (a managed table takes its folder along)
    database = Path(urlparse(live).path).parent
    on_disk = {p.name for p in database.glob(f"{EXP_T}__v*")}
    assert on_disk == {Path(urlparse(f).path).name for f in kept}


def test_folders_an_earlier_abeval_wrote_are_removed_after_a_commit(stores: Stores) -> None:
    """An earlier abeval wrote each version of ``experiments`` as a folder
    ``<warehouse>/experiments/v<N>-<token>``, which no table owns. Made here as it
    did (the live rows copied into ``v7-…``, the table pointed at it, a stale
    ``v5-…`` beside it): after the next commit the stale folders and the first,
    empty ``v0`` are gone, the one that was live is kept (a query planned before
    the commit may read it), and after one more commit it is gone too."""
    from pyspark.sql.connect.session import SparkSession

    from abeval.store.backends.spark.schema import set_location_sql

    root = stores.folder / "warehouse" / EXP_T
    session = SparkSession.builder.remote(stores.spark).create()
    try:
        rows = session.sql(f"SELECT * FROM {EXP_T}")
        for old in ("v5-00aa11bb", "v7-0a1b2c3d"):
            rows.write.mode("error").parquet(str(root / old))
        session.sql(set_location_sql(EXP_T, f"file:{root / 'v7-0a1b2c3d'}")).collect()
    finally:
        session.stop()
    (root / "v0").mkdir(exist_ok=True)  # the first, empty version (made at its first write)
    assert {p.name for p in root.iterdir()} >= {"v0", "v5-00aa11bb", "v7-0a1b2c3d"}
    for alpha, left in (("0.1", {"v7-0a1b2c3d"}), ("0.15", set())):
        said = runner.invoke(
            app, ["experiment", "set", EXP, "--alpha", alpha, "--db", stores.spark]
        )
        assert said.exit_code == 0, said.output
        assert {p.name for p in root.iterdir()} == left
        shown = runner.invoke(app, ["experiment", "show", EXP, "-f", "json", "--db", stores.spark])
        assert json.loads(shown.stdout)["config"]["alpha"] == float(alpha)
