"""Building OPE test experiments: impression rows to an abeval event file."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from abeval.store.events_format import REQUIRED

HEADER = [*REQUIRED, "request_id", "item_id", "position", "propensity"]
POSITIONS = (1, 2, 3)
START = datetime(2024, 3, 1, 10, tzinfo=UTC)

#: (arm, user, request, item, position, clicked, propensity or None)
Impression = tuple[str, str, str, str, int, bool, float | None]


def write_impressions(path: Path, experiment: str, rows: Iterable[Impression]) -> Path:
    """One impression event per row (and a click one second later when clicked)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(HEADER)
        for i, (arm, user, request, item, position, clicked, propensity) in enumerate(rows):
            ts = START + timedelta(seconds=2 * i)
            p = "" if propensity is None else repr(propensity)
            out.writerow([experiment, arm, user, ts.isoformat(), "impression", request, item,
                          position, p])  # fmt: skip
            if clicked:
                later = (ts + timedelta(seconds=1)).isoformat()
                out.writerow([experiment, arm, user, later, "click", request, item, "", ""])
    return path


def write_target_file(path: Path, rows: Sequence[tuple[str, str, int, float]]) -> Path:
    """A --target-propensities CSV: request_id, item_id, position, probability."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["request_id", "item_id", "position", "probability"])
        out.writerows([r, i, p, repr(q)] for r, i, p, q in rows)
    return path


def small_logs(propensity: bool = True, missing_every: int = 0) -> list[Impression]:
    """Two arms of 30 users, two requests each of two positions (items a0..a2 at
    position 1, b0..b2 at 2); the first impression of every ``missing_every``-th
    user has no propensity."""
    rows: list[Impression] = []
    for arm, shift in (("control", 0), ("treatment", 1)):
        for u in range(30):
            for q in range(2):
                for k, letter in ((1, "a"), (2, "b")):
                    item = f"{letter}{(u + q + shift * k) % 3}"
                    p: float | None = 1 / 3 if propensity else None
                    if missing_every and u % missing_every == 0 and q == 0 and k == 1:
                        p = None
                    rows.append((arm, f"{arm}{u}", f"{arm}{u}-{q}", item, k, (u + q) % 4 == 0, p))
    return rows


def _policy(rng: np.random.Generator, items: int, zero: int | None = None) -> np.ndarray:
    p = rng.dirichlet(np.full(items, 0.7))
    if zero is not None:
        p[zero] = 0.0
        p /= p.sum()
    return p


def random_logs(seed: int) -> pd.DataFrame:
    """Two arms; per user 1-6 requests of three positions; position k shows one of
    six items of its own (no item twice in a request). The control never shows
    item 5 at position 3, so the treatment has a support deficit there."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(0.02, 0.4, size=(4, 6))
    policies = {
        "control": {k: _policy(rng, 6, zero=5 if k == 3 else None) for k in POSITIONS},
        "treatment": {k: _policy(rng, 6) for k in POSITIONS},
    }
    rows = []
    for arm, policy in policies.items():
        for u in range(250):
            for q in range(int(rng.integers(1, 7))):
                request = f"{arm}-{u}-{q}"
                for k in POSITIONS:
                    a = int(rng.choice(6, p=policy[k]))
                    clicked = bool(rng.random() < quality[k, a])
                    rows.append(
                        (arm, f"{arm}-{u}", request, f"i{k}{a}", k, clicked, float(policy[k][a]))
                    )
    return pd.DataFrame(
        rows, columns=["arm", "user", "request", "item", "position", "clicked", "propensity"]
    )
