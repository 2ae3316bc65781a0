"""Helpers shared by the statistics-layer tests (imported by module name)."""

from __future__ import annotations

import math
from typing import Any


def assert_json_clean(value: Any) -> None:
    """Every leaf of a to_dict() tree is a JSON scalar and every float is finite."""
    if isinstance(value, dict):
        assert all(isinstance(k, str) for k in value)
        for v in value.values():
            assert_json_clean(v)
    elif isinstance(value, list):
        for v in value:
            assert_json_clean(v)
    elif isinstance(value, float):
        assert math.isfinite(value), value
    else:
        assert value is None or isinstance(value, str | int | bool), type(value)
