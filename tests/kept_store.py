"""What the kept-summary tests share: a fresh copy of a module's built store per
test, and the pattern of a statement that reads the events."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

#: A statement that names the events table (a warm read must run none).
EVENTS = re.compile(r"\bevents\b", re.IGNORECASE)


def copy_of(history: Path, tmp_path: Path) -> str:
    """A copy of the store ``history`` in ``tmp_path``, for one test to change."""
    target = tmp_path / "store.duckdb"
    shutil.copy(history, target)
    return str(target)
