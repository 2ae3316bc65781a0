"""Fixtures for the statistics-layer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).parents[2].parent / "shared" / "reference" / "gbstats.json"


@pytest.fixture(scope="session")
def reference_cases() -> dict[str, dict[str, Any]]:
    """The cases of reference/gbstats.json by id (skips when the file is absent)."""
    if not REFERENCE.is_file():
        pytest.skip(f"reference values not found at {REFERENCE} (the shared folder is absent)")
    return {case["id"]: case for case in json.loads(REFERENCE.read_text())["cases"]}
