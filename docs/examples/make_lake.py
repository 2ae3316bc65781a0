"""Write docs/examples/lake/events.parquet, the table docs/usage.md reads in place
(#tables-read-in-place): a simulated experiment (400 users, seed 5) logged the way
another system might log it, with its own column names (``uid``, ``variant``,
``event_time`` ...), its own event types (``view``, ``clk``, ``buy``) and ``scroll``
events abeval does not know. Deterministic: run it again and the rows are the same
(tests/project/test_docs_run.py checks it).

    python docs/examples/make_lake.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from abeval.simulate import SimulationConfig, write_events

#: The simulated columns kept, in order, and the lake's name for each.
KEPT = ("experiment", "arm", "user_id", "ts", "event_type", "request_id", "item_id")
KEPT += ("position", "value", "propensity", "device")
LAKE_NAMES = ["exp", "variant", "uid", "event_time", "kind", "req", "item_id"]
LAKE_NAMES += ["pos", "revenue", "propensity", "device"]
KINDS = {"impression": "view", "click": "clk", "purchase": "buy"}


def lake_table() -> pa.Table:
    """The simulated events under the lake's names, with one ``scroll`` event after
    every 500th view."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.parquet"
        write_events(SimulationConfig(users=400, seed=5), path)
        events = pq.read_table(path)
    events = events.select(list(KEPT)).rename_columns(LAKE_NAMES)
    kinds = [KINDS.get(k, k) for k in events["kind"].to_pylist()]
    events = events.set_column(events.schema.get_field_index("kind"), "kind", pa.array(kinds))
    views = events.filter(pc.equal(events["kind"], "view"))
    scrolls = views.take(list(range(0, views.num_rows, 500)))
    scrolls = scrolls.set_column(
        scrolls.schema.get_field_index("kind"), "kind", pa.array(["scroll"] * scrolls.num_rows)
    )
    return pa.concat_tables([events, scrolls])


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "lake"
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(lake_table(), out / "events.parquet")
