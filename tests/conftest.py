"""Shared fixtures."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

# Property tests check laws, not speed: time limits live in benchmarks/, and a
# shared machine can take a fresh example past hypothesis's default 200 ms.
settings.register_profile("abeval", deadline=None)
settings.load_profile("abeval")


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """A path for a fresh DuckDB store."""
    return str(tmp_path / "store.duckdb")


@pytest.fixture(params=["sqlite", "duckdb", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Connection]:
    """A connection, in one transaction, to a fresh database of each engine the
    suite can run: SQLite (the portable backend), DuckDB, PostgreSQL (``-m postgres``)."""
    from sqlalchemy import create_engine

    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_database")
    elif request.param == "duckdb":
        url = f"duckdb:///{tmp_path / 'b.duckdb'}"
    else:
        url = f"sqlite:///{tmp_path / 'b.sqlite'}"
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        engine.dispose()


def pytest_configure(config: pytest.Config) -> None:
    """A run stopped with SIGTERM (``timeout``, a CI cancel) exits through Python,
    so that atexit stops the throwaway PostgreSQL server: otherwise the server,
    and a query it is still running, outlive the run."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


# A throwaway PostgreSQL server (started on first use) for tests marked postgres.
from pgserver import postgres_database, postgres_server, postgres_url  # noqa: E402, F401
