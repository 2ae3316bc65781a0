"""Building OPE test experiments: impression rows to an abeval event file."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

HEADER = [
    "experiment",
    "arm",
    "user_id",
    "ts",
    "event_type",
    "request_id",
    "item_id",
    "position",
    "propensity",
]
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
