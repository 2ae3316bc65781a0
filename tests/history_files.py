"""A forecast history written as a CSV file: rows with a known slope (0.8) between
offline and online lifts, shared by the forecast's CLI, store and PostgreSQL tests."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def _rows(k: int = 10, seed: int = 7) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        xi = float(rng.normal(0.01, 0.02))
        s = float(rng.uniform(0.006, 0.014))
        out.append(
            {
                "experiment": f"exp-{i:02d}",
                "signal": "ndcg@10",
                "offline_lift": round(xi + float(rng.normal(0, 0.004)), 6),
                "offline_se": 0.004,
                "online_lift": round(0.8 * xi + float(rng.normal(0, 0.012)), 6),
                "online_se": round(s, 6),
                "users": 200_000,
            }
        )
    return out


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path
