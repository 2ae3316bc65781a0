"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    """A path for a fresh DuckDB store."""
    return str(tmp_path / "store.duckdb")


# A throwaway PostgreSQL server (started on first use) for tests marked postgres.
from pgserver import postgres_database, postgres_server, postgres_url  # noqa: E402, F401
