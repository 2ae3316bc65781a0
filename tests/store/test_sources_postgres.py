"""A table of a PostgreSQL store read in place gives the report of its ingested copy
(the same table and checks as tests/store/test_sources.py on DuckDB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from test_sources import EXPERIMENT, MAPPING, OPTIONS, assert_same_as_ingested, make_lake

from abeval.analysis.online import build_report
from abeval.cli.app import option_name
from abeval.errors import InputError
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.ingest import ingest_file
from abeval.store.sources import add_source, list_sources

pytestmark = pytest.mark.postgres


@pytest.mark.slow
def test_a_postgres_table_gives_the_ingested_report(tmp_path: Path, postgres_database: str) -> None:
    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=700, seed=11, days=4, pre_period_days=3), events)
    with open_store(postgres_database) as store:
        ingest_file(store, events)
        ingested = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        with store.begin() as conn:
            make_lake(conn)
        check = add_source(store, "lake", "lake.events", MAPPING)
        assert check.unmapped == {"scroll": 7}
        in_place = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        with store.connect() as conn:  # the temporary views are gone
            assert conn.execute(text("SELECT COUNT(*) FROM events")).scalar() == 0
            views = "SELECT COUNT(*) FROM pg_views WHERE schemaname LIKE 'pg_temp%'"
            assert conn.execute(text(views)).scalar() == 0
    assert_same_as_ingested(ingested, in_place, "lake.events")


def test_postgres_names_a_missing_table_and_refuses_files(postgres_database: str) -> None:
    with open_store(postgres_database) as store:
        with pytest.raises(InputError) as missing:
            add_source(store, "lake", "lake.nothing", MAPPING)
        with pytest.raises(InputError) as files:
            add_source(store, "lake", "data/*.parquet", MAPPING)
        assert list_sources(store) == []
    assert missing.value.spelt(option_name) == (
        "source 'lake': no table or view lake.nothing in the store's database (--table); "
        "name it as SCHEMA.TABLE, as `\\dt` in psql lists it"
    )
    assert files.value.spelt(option_name) == (
        "source 'lake': --table data/*.parquet: files are read in place only by a DuckDB "
        "store; this store is postgresql (name one of its tables, or load the files with "
        "`abeval ingest`)"
    )
