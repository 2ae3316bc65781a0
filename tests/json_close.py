"""``close``: two plain JSON values equal, their numbers to a tolerance (shared by
the kept summaries' tests)."""

from __future__ import annotations

import math
from typing import Any


def close(a: Any, b: Any, path: str = "", tol: float = 1e-9) -> None:
    """``a`` and ``b`` (plain JSON values) equal, numbers to ``tol`` (relative, or
    absolute near 0: two reads of the same events differ in the last bits of sums
    that DuckDB's threads add in any order)."""
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), path
        assert math.isclose(a, b, rel_tol=tol, abs_tol=tol), (path, a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            close(a[k], b[k], f"{path}.{k}", tol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            close(x, y, f"{path}[{i}]", tol)
    else:
        assert a == b, (path, a, b)
