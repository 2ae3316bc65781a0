"""Random experiment logs for the replay tests, and the same lists as evaluate files."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metrics_helpers import write_csv
from sqlalchemy import text

from abeval.store.ingest.keys import number_ingest

INSERT = text(
    "INSERT INTO events (experiment, arm, user_id, ts, event_type, request_id, item_id, "
    "position, value, row_key, ingest_id) VALUES (:experiment, :arm, :user_id, "
    "CAST(:ts AS TIMESTAMP), :event_type, :request_id, :item_id, :position, :value, :row_key, 1)"
)


@dataclass
class Log:
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        arm: str,
        user: str,
        event_type: str,
        request: str | None = None,
        item: str | None = None,
        position: int | None = None,
        ts: str = "2024-01-02 00:00:00",
        experiment: str = "exp",
        value: float | None = None,
    ) -> None:
        self.rows.append(
            {
                "experiment": experiment,
                "arm": arm,
                "user_id": user,
                "ts": ts,
                "event_type": event_type,
                "request_id": request,
                "item_id": item,
                "position": position,
                "value": value,
                "row_key": f"r{len(self.rows)}",
            }
        )

    def insert(self, conn: Any) -> None:
        """The rows as ingest 1, with the integer keys an ingest gives them."""
        conn.execute(INSERT, self.rows)
        number_ingest(conn, 1)


def random_log(
    seed: int, users: int = 40
) -> tuple[Log, dict[str, list[tuple[str, str, int, float]]]]:
    """One request per user; returns the log and, per arm, (user, item, position, gain) rows."""
    rng = random.Random(seed)
    log = Log()
    lists: dict[str, list[tuple[str, str, int, float]]] = {"A": [], "B": []}
    items = [f"i{n}" for n in range(30)]
    for u in range(users):
        arm = "A" if u % 2 == 0 else "B"
        user = f"u{u}"
        log.add(arm, user, "exposure", ts="2024-01-01 00:00:00")
        shown = rng.sample(items, rng.choice([1, 2, 4, 7, 12]))
        for pos, item in enumerate(shown, start=1):
            log.add(arm, user, "impression", f"req{u}", item, pos)
            gain = 0.0
            if rng.random() < 0.25:
                log.add(arm, user, "click", f"req{u}", item)
                gain = 1.0
                if rng.random() < 0.4:
                    log.add(arm, user, "purchase", f"req{u}", item, value=10.0)
                    gain = 2.0
            lists[arm].append((user, item, pos, gain))
    return log, lists


def evaluate_files(
    tmp_path: Path, lists: dict[str, list[tuple[str, str, int, float]]]
) -> tuple[list[Path], Path]:
    recs = [
        write_csv(
            tmp_path / f"{arm}.csv", "user_id,item_id,rank", [(u, i, p) for u, i, p, _ in rows]
        )
        for arm, rows in lists.items()
    ]
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [(u, i, g) for rows in lists.values() for u, i, _, g in rows],
    )
    return recs, truth
