"""A table of a Spark cluster read in place gives the report of its ingested copy
(the same table, mapping and checks as tests/store/test_sources.py on DuckDB).

The simulated experiment is ingested into DuckDB and reported; then its events
move to ``lake.events`` under other column names and event-type values (plus rows
of a type the mapping leaves out), with the timestamps as instants (Spark's
``TIMESTAMP``, a zone-aware type). That table is written as Parquet and
registered in the cluster's catalog beside the store's emptied tables
(tests/spark/spark_tables.py). ``abeval source add/list/remove`` and
``experiments`` must say the same on both stores, and the report read in place
on Spark must equal the ingested copy's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from spark_tables import export_tables, register_tables
from test_sources import EXPERIMENT, OPTIONS, SCROLLS, assert_same_as_ingested, lake_store
from typer.testing import CliRunner

from abeval.analysis.online import build_report
from abeval.cli import app
from abeval.store import open_store
from abeval.store.backends.spark import own_tables

pytestmark = pytest.mark.spark
runner = CliRunner()

#: tests/store/test_sources.py's MAPPING as the options of `abeval source add`.
MAP = [
    "--map",
    "experiment=exp,arm=variant,user_id=uid,ts=event_time,event_type=kind,request_id=req,"
    "position=pos,value=revenue",
    "--event-type",
    "impression=view,click=clk,purchase=buy",
    "--attributes",
    "device=dev",
]


@pytest.fixture(scope="module")
def lake(
    spark_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(DuckDB store, Spark URL, the ingested copy's report): both stores hold
    ``lake.events`` and no ingested event."""
    from pyspark.sql.connect.session import SparkSession

    folder = tmp_path_factory.mktemp("spark-sources")
    duck, ingested = lake_store(folder, users=500)
    folders = export_tables(duck, folder / "warehouse", "default")
    parquet = folder / "warehouse" / "lake" / "events"
    parquet.mkdir(parents=True)
    con = duckdb.connect(str(duck), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "COPY (SELECT * REPLACE (CAST(event_time AS TIMESTAMPTZ) AS event_time) "
            f"FROM lake.events) TO '{parquet / 'part-0.parquet'}' (FORMAT parquet)"
        )
    finally:
        con.close()
    session = SparkSession.builder.remote(spark_url).create()
    try:
        register_tables(session, "default", folders)
        register_tables(session, "lake", {"events": parquet})
        own_tables.drop(session, "sources")
        yield str(duck), spark_url, ingested
    finally:
        own_tables.drop(session, "sources")
        session.stop()


def _cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def _listed(db: str) -> list[dict[str, Any]]:
    doc = json.loads(_cli("source", "list", "--json", "--db", db).stdout)
    for source in doc:
        source.pop("created_at"), source.pop("updated_at")
    return list(doc)


def test_a_spark_table_gives_the_ingested_report(
    lake: tuple[str, str, dict[str, Any]],
) -> None:
    duck, spark, ingested = lake
    said = [_cli("source", "add", "lake", "--table", "lake.events", *MAP, "--db", db).stderr
            for db in (duck, spark)]  # fmt: skip
    assert said[0] == said[1]
    assert f"scroll {SCROLLS}" in said[0]
    assert _listed(duck) == _listed(spark) != []
    a, b = (json.loads(_cli("experiments", "--json", "--db", db).stdout) for db in (duck, spark))
    assert a == b and [e["experiment"] for e in a] == [EXPERIMENT]
    with open_store(spark, read_only=True) as store:
        report = build_report(store, EXPERIMENT, OPTIONS).to_dict()
    assert_same_as_ingested(ingested, report, "lake.events")
    removed = [_cli("source", "remove", "lake", "--db", db).stderr for db in (duck, spark)]
    assert removed[0] == removed[1]
    assert _listed(spark) == []


@pytest.mark.parametrize(
    ("fix", "line"),
    [
        (
            ("--map", "user_id=user_key"),
            "source 'bad': lake.events has no column 'user_key' (--map user_id=user_key); "
            "its columns are exp, variant, uid, event_time, kind, req, item_id, pos, revenue, "
            "event_id, propensity, dev",
        ),
        (
            ("--map", "ts=revenue"),
            "source 'bad': lake.events: column 'revenue' is DOUBLE, and ts needs a timestamp "
            "or a date; cast it in a view (CREATE VIEW ... AS SELECT CAST(revenue AS "
            "TIMESTAMP) ...)",
        ),
    ],
)
def test_a_bad_mapping_is_the_same_line_on_spark(
    lake: tuple[str, str, dict[str, Any]], fix: tuple[str, str], line: str
) -> None:
    """A missing column or one of the wrong type: the line DuckDB gives, nothing recorded."""
    duck, spark, _ = lake
    mapping = [*MAP]
    mapping[1] = ",".join(p for p in MAP[1].split(",") if p.split("=")[0] != fix[1].split("=")[0])
    mapping[1] += "," + fix[1]
    for db in (duck, spark):
        result = _cli(
            "source", "add", "bad", "--table", "lake.events", *mapping, "--db", db, code=1
        )
        assert (result.stdout, result.stderr) == ("", f"Error: {line}\n")
        assert "bad" not in [s["name"] for s in _listed(db)]


def test_a_missing_spark_table_is_named(lake: tuple[str, str, dict[str, Any]]) -> None:
    _, spark, _ = lake
    result = _cli("source", "add", "bad", "--table", "lake.nothing", *MAP, "--db", spark, code=1)
    assert result.stderr == (
        "Error: source 'bad': no table or view lake.nothing in the Spark catalog (--table); "
        "name it as DATABASE.TABLE, as SHOW TABLES IN DATABASE lists it\n"
    )
    files = _cli("source", "add", "bad", "--table", "data/*.parquet", *MAP, "--db", spark, code=1)
    assert files.stderr == (
        "Error: source 'bad': --table data/*.parquet: files are read in place only by a DuckDB "
        "store; this store is spark (name one of its tables, or load the files with "
        "`abeval ingest`)\n"
    )
