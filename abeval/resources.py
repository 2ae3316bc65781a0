"""Locate the data folders shipped with abeval (``migrations/`` and ``reports/``).

In a source checkout they are top-level folders beside the package; in an
installed wheel they are force-included under ``abeval/_data/``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` (``"migrations"`` or ``"reports"``)."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"abeval is installed without its {name}/ folder")
