"""What the ingest tests read back from a DuckDB store, and how they run the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()


def run(*args: str) -> Any:
    """``abeval ARGS`` through typer's runner (stdout and stderr apart)."""
    return runner.invoke(app, list(args))


def counts(db: Path) -> tuple[int, int, int]:
    """(events, ingests, rejected rows) in the store; zeros when there is none."""
    if not db.exists():
        return (0, 0, 0)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("events", "ingests", "rejected_rows")
        )
    finally:
        con.close()


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def store_of(csv: Path) -> str:
    """A DuckDB store beside ``csv`` (same name, ``.duckdb``) holding its rows."""
    from abeval.store import open_store
    from abeval.store.ingest import ingest_file

    db = str(csv.with_suffix(".duckdb"))
    with open_store(db) as store:
        ingest_file(store, csv)
    return db


def simulated_store(folder: Path, users: int, seed: int) -> str:
    """A DuckDB store in ``folder`` holding one simulated experiment (home-reco-v2)
    of ``users`` users, loaded through the API; its path."""
    import abeval
    from abeval.simulate import SimulationConfig, write_events

    events = folder / "events.csv"
    write_events(SimulationConfig(users=users, seed=seed), events)
    path = str(folder / "store.duckdb")
    with abeval.open(path) as store:
        summary = store.ingest(events)
    assert summary.status == "ok" and summary.inserted == summary.rows_read > 0
    return path
