"""A table read in place gives the report of its ingested copy (DuckDB: a table of the
store, a Parquet glob, a CSV file; PostgreSQL in tests/store/test_sources_postgres.py).

The table is the ingested events under other column names and event-type values,
plus rows of an event type the mapping leaves out; the report must be the ingested
copy's, except that health counts those rows and the methodology names the source.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import text
from test_postgres_report import assert_same

from abeval.analysis.online import ReportOptions, build_report
from abeval.cli.app import option_name
from abeval.errors import InputError
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file
from abeval.store.source_mapping import Mapping
from abeval.store.sources import add_source, source_experiments

EXPERIMENT = "home-reco-v2"
OPTIONS = ReportOptions(segment="device")
SCROLLS = 7  # rows of an event type ("scroll") the mapping leaves out

# The ingested events under the names another team's log would use. Portable SQL:
# the PostgreSQL test runs it too.
RENAMED = (
    "SELECT experiment AS exp, arm AS variant, user_id AS uid, ts AS event_time, "
    "CASE event_type WHEN 'impression' THEN 'view' WHEN 'click' THEN 'clk' "
    "WHEN 'purchase' THEN 'buy' ELSE event_type END AS kind, request_id AS req, item_id, "
    "position AS pos, value AS revenue, event_id, propensity, "
    "CAST(attributes AS JSON) ->> 'device' AS dev FROM events"
)
MAPPING = Mapping(
    columns={
        "experiment": "exp",
        "arm": "variant",
        "user_id": "uid",
        "ts": "event_time",
        "event_type": "kind",
        "request_id": "req",
        "position": "pos",
        "value": "revenue",
    },
    event_types={"view": "impression", "clk": "click", "buy": "purchase"},
    attributes={"device": "dev"},
)


def make_lake(conn: Any) -> None:
    """``lake.events``: the store's events renamed, plus :data:`SCROLLS` rows of an
    unmapped type; then the store's own copy is emptied."""
    conn.execute(text("CREATE SCHEMA lake"))
    conn.execute(text(f"CREATE TABLE lake.events AS {RENAMED}"))
    conn.execute(
        text(
            "INSERT INTO lake.events (exp, variant, uid, event_time, kind) "
            "SELECT exp, variant, uid, event_time, 'scroll' FROM lake.events "
            f"WHERE kind = 'exposure' ORDER BY uid LIMIT {SCROLLS}"
        )
    )
    for table in ("events", "experiments", "ingests"):
        conn.execute(text(f"DELETE FROM {table}"))


def assert_same_as_ingested(ingested: dict[str, Any], in_place: dict[str, Any], table: str) -> None:
    """The same report, but for what reading in place adds: the unmapped rows in
    health and a problem line, the source in the methodology, and no ingests."""
    a, b = ingested, in_place
    assert a["health"]["events_unmapped"] == 0
    assert b["health"]["events_unmapped"] == SCROLLS
    line = (
        f"{SCROLLS} events of source 'lake' with an event type that maps to nothing "
        f"(scroll {SCROLLS}): not analysed; map them with "
        "`abeval source add lake --replace --event-type TYPE=VALUE ...`."
    )
    assert b["health"]["problems"] == [*a["health"]["problems"], line]
    note = (
        f"Events read in place from source 'lake' ({table}), not copied: arm=variant, "
        "event_type=kind, experiment=exp, position=pos, request_id=req, ts=event_time, "
        "user_id=uid, value=revenue; event types purchase=buy, click=clk, "
        "impression=view; attributes device=dev."
    )
    assert b["methodology"]["notes"] == [*a["methodology"]["notes"], note]
    assert a["methodology"]["ingests"] and b["methodology"]["ingests"] == []
    assert a["metrics"] and a["segments"] and a["offline"] and a["daily"]
    for key in ("events_unmapped", "problems"):
        b["health"][key] = a["health"][key]
    for key in ("notes", "ingests"):
        b["methodology"][key] = a["methodology"][key]
    assert_same(a, b)


def lake_store(folder: Path, users: int) -> tuple[Path, dict[str, Any]]:
    """A store whose events were ingested, the report of that copy, and then the
    events moved to ``lake.events`` under other names (tests/spark reuses it)."""
    events = folder / "events.csv"
    write_events(SimulationConfig(users=users, seed=11, days=4, pre_period_days=3), events)
    db = folder / "template.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, events)
        report = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        with store.begin() as conn:
            make_lake(conn)
    return db, report


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return lake_store(tmp_path_factory.mktemp("sources"), users=700)


def copy_of(template: tuple[Path, dict[str, Any]], tmp_path: Path) -> str:
    db = tmp_path / "store.duckdb"
    shutil.copy(template[0], db)
    return str(db)


def test_a_table_of_the_store_gives_the_ingested_report(
    template: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db = copy_of(template, tmp_path)
    with open_store(db) as store:
        check = add_source(store, "lake", "lake.events", MAPPING)
    assert check.unmapped == {"scroll": SCROLLS}
    assert check.in_store == ()
    with open_store(db, read_only=True) as store:  # as `abeval report` opens it
        report = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        with store.connect() as conn:  # the views are gone: the store's own tables again
            assert conn.execute(text("SELECT COUNT(*) FROM events")).scalar() == 0
            assert conn.execute(text("SELECT COUNT(*) FROM experiments")).scalar() == 0
            temporary = (
                "SELECT COUNT(*) FROM duckdb_views() WHERE temporary "
                "AND view_name IN ('events', 'experiments')"
            )
            assert conn.execute(text(temporary)).scalar() == 0
    assert_same_as_ingested(template[1], report, "lake.events")


def test_files_give_the_ingested_report(
    template: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Parquet files by a glob (timestamps with a zone) and one CSV file, read in
    place by a store that holds nothing else."""
    parts = tmp_path / "parts"
    parts.mkdir()
    con = duckdb.connect(str(template[0]), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        for i in range(2):
            con.execute(
                "COPY (SELECT * REPLACE (CAST(event_time AS TIMESTAMPTZ) AS event_time) "
                f"FROM lake.events WHERE hash(uid) % 2 = {i}) TO '{parts}/part-{i}.parquet'"
            )
        con.execute(f"COPY lake.events TO '{tmp_path}/lake.csv'")
    finally:
        con.close()
    for name, table in (("parquet", f"{parts}/part-*.parquet"), ("csv", f"{tmp_path}/lake.csv")):
        db = str(tmp_path / f"{name}.duckdb")
        with open_store(db) as store:
            add_source(store, "lake", table, MAPPING)
        with open_store(db, read_only=True) as store:
            report = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        assert_same_as_ingested(template[1], report, table)


def test_a_table_of_one_experiment(template: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """``--experiment NAME``: a table without an experiment column."""
    db = copy_of(template, tmp_path)
    with open_store(db) as store:
        with store.begin() as conn:
            conn.execute(text("CREATE TABLE lake.one AS SELECT * EXCLUDE (exp) FROM lake.events"))
        columns = {k: v for k, v in MAPPING.columns.items() if k != "experiment"}
        mapping = Mapping(columns, MAPPING.event_types, EXPERIMENT, MAPPING.attributes)
        check = add_source(store, "lake", "lake.one", mapping)
        assert check.events == {EXPERIMENT: template[1]["health"]["events"]}
        report = build_report(store, EXPERIMENT, OPTIONS).to_dict()
    assert report["health"]["events_unmapped"] == SCROLLS
    assert_same(template[1]["metrics"], report["metrics"])


def test_the_store_copy_wins_and_both_are_listed(
    template: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """An experiment that is both ingested and in a source is read from the store;
    a source's other experiments are read in place, in the same process."""
    db = copy_of(template, tmp_path)
    with open_store(db) as store:
        with store.begin() as conn:  # the lake gets a second experiment
            conn.execute(
                text(
                    "INSERT INTO lake.events SELECT * REPLACE ('other' AS exp) "
                    f"FROM lake.events WHERE exp = '{EXPERIMENT}'"
                )
            )
        add_source(store, "lake", "lake.events", MAPPING)
        check = add_source(store, "lake", "lake.events", MAPPING, replace_existing=True)
        assert check.in_store == ()
        events = Path(db).parent / "ingest.csv"
        write_events(SimulationConfig(users=200, seed=2, days=2, pre_period_days=1), events)
        ingest_file(store, events)  # the store now holds home-reco-v2 itself
        listed, problems = source_experiments(store)
        assert [e.experiment for e in listed] == ["other"] and listed[0].source == "lake"
        assert problems == [
            f"experiment {EXPERIMENT} of source 'lake' is also in the store; "
            "the store's copy is the one analysed"
        ]
        stored = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        other = build_report(store, "other", OPTIONS).to_dict()
        assert [e.experiment for e in list_experiments(store)] == [EXPERIMENT]
    users = {a["arm"]: a["users"] for a in stored["arms"]}
    assert sum(users.values()) <= 200 and stored["health"]["events_unmapped"] == 0
    assert other["health"]["events_unmapped"] == SCROLLS  # copied with the rest
    other["experiment"] = EXPERIMENT
    assert_same(template[1]["metrics"], other["metrics"])


def test_a_table_that_changed_is_named_at_report_time(
    template: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db = copy_of(template, tmp_path)
    with open_store(db) as store:
        add_source(store, "lake", "lake.events", MAPPING)
        with store.begin() as conn:
            conn.execute(text("ALTER TABLE lake.events RENAME COLUMN uid TO user_key"))
    with open_store(db, read_only=True) as store, pytest.raises(InputError) as caught:
        build_report(store, EXPERIMENT, OPTIONS)
    said = (
        "source 'lake' no longer fits its table: lake.events has no column 'uid' "
        "({}); its columns are exp, variant, user_key, event_time, kind, req, "
        "item_id, pos, revenue, event_id, propensity, dev; fix the table, or record the "
        "mapping again with `abeval source add lake --replace ...`"
    )
    # The library names its parameter, the CLI its option.
    assert caught.value.message == said.format("columns user_id=uid")
    assert caught.value.spelt(option_name) == said.format("--map user_id=uid")


def test_the_experiment_filter_reaches_the_parquet_scan(
    template: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The view filters on the experiment, and DuckDB pushes that filter into the
    Parquet reader (so row groups of other experiments are skipped)."""
    from abeval.store.sources import read_in_place

    con = duckdb.connect(str(template[0]), read_only=True)
    try:
        con.execute(
            f"COPY (SELECT * FROM lake.events UNION ALL SELECT * REPLACE ('other' AS exp) "
            f"FROM lake.events ORDER BY exp) TO '{tmp_path}/two.parquet'"
        )
    finally:
        con.close()
    db = str(tmp_path / "two.duckdb")
    with open_store(db) as store:
        add_source(store, "lake", f"{tmp_path}/two.parquet", MAPPING)
    with (
        open_store(db, read_only=True) as store,
        store.connect() as conn,
        read_in_place(conn, EXPERIMENT),
    ):
        plan = conn.execute(text("EXPLAIN SELECT COUNT(*) FROM events")).fetchall()[0][1]
    scan = plan[plan.index("Read Parquet") :]
    assert f"exp = '{EXPERIMENT}'" in scan
