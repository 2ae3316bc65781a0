"""Shared fixtures."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check laws, not speed: time limits live in benchmarks/, and a
# shared machine can take a fresh example past hypothesis's default 200 ms.
settings.register_profile("abeval", deadline=None)
settings.load_profile("abeval")


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """A path for a fresh DuckDB store."""
    return str(tmp_path / "store.duckdb")


def pytest_configure(config: pytest.Config) -> None:
    """A run stopped with SIGTERM (``timeout``, a CI cancel) exits through Python,
    so that atexit stops the throwaway PostgreSQL server: otherwise the server,
    and a query it is still running, outlive the run."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


# A throwaway PostgreSQL server (started on first use) for tests marked postgres.
from pgserver import postgres_database, postgres_server, postgres_url  # noqa: E402, F401
