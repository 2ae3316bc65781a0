"""Fixtures for the statistics-layer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: GrowthBook gbstats reference values, kept in the repository (see data/README.md).
REFERENCE = Path(__file__).parent / "data" / "gbstats_reference.json"


@pytest.fixture(scope="session")
def reference_cases() -> dict[str, dict[str, Any]]:
    """The cases of data/gbstats_reference.json by id."""
    return {case["id"]: case for case in json.loads(REFERENCE.read_text())["cases"]}
