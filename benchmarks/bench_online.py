"""Time the online statements of ``abeval report`` against a copy of the code before.

Runs the default report (``--format json``) on each store, once per code and
round, the codes alternating, every statement timed (wall and the process's CPU,
DuckDB's threads included); prints per store and code the medians of the online
statements' seconds (from the first statement that makes an ``abeval_online_``
table up to the first of the replay or the off-policy section) and of the whole
report's, and the machine's load before each round.

    python benchmarks/bench_online.py --before DIR --stores A.duckdb B.duckdb --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import code_copy  # noqa: E402

EXPERIMENT = "home-reco-v2"

# One report in this process, every statement's wall and CPU seconds logged.
TIMED = r"""
import json, sys, time
from sqlalchemy import event
from sqlalchemy.engine import Engine

log, started = [], []

@event.listens_for(Engine, "before_cursor_execute")
def before(*_):
    started.append((time.perf_counter(), time.process_time()))

@event.listens_for(Engine, "after_cursor_execute")
def after(conn, cursor, statement, *_):
    wall, cpu = started.pop()
    log.append([time.perf_counter() - wall, time.process_time() - cpu, statement[:200]])

from abeval.cli import app
t0, c0 = time.perf_counter(), time.process_time()
try:
    app(sys.argv[2:], standalone_mode=False)
finally:
    with open(sys.argv[1], "w") as f:
        json.dump({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                   "statements": log}, f)
"""


def online_seconds(statements: list[list]) -> tuple[float, float]:
    """(wall, CPU) of the online section: from the first statement making an
    ``abeval_online_`` table to the first of the replay's or off-policy's."""
    wall = cpu = 0.0
    inside = False
    for seconds, process, sql in statements:
        if "abeval_online_" in sql and "CREATE" in sql.upper():
            inside = True
        if inside and ("abeval_replay_" in sql or "abeval_ope_" in sql):
            break
        if inside:
            wall += seconds
            cpu += process
    return wall, cpu


def one_report(code: Path, store: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "statements.json"
        argv = [sys.executable, "-c", TIMED, str(out), "report", "-e", EXPERIMENT]
        argv += ["--db", str(store), "--format", "json"]
        env = {**os.environ, "PYTHONPATH": str(code)}
        subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
        doc = json.loads(out.read_text())
    wall, cpu = online_seconds(doc["statements"])
    return {"online_wall": wall, "online_cpu": cpu, "wall": doc["wall"], "cpu": doc["cpu"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=code_copy, required=True, help="a git archive copy of main")
    ap.add_argument("--stores", type=Path, nargs="+", required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    codes = {"before": args.before.resolve(), "now": HERE.parent}
    seen: dict[tuple[str, str], list[dict[str, float]]] = {}
    loads = []
    for _ in range(args.runs):
        for store in args.stores:
            for name, code in codes.items():
                loads.append(os.getloadavg()[0])
                seen.setdefault((store.name, name), []).append(one_report(code, store))
    print(f"runs {args.runs}; load before each report {min(loads):.1f}-{max(loads):.1f}")
    print("| store | code | online wall s | online CPU s | report wall s | report CPU s |")
    print("|---|---|---:|---:|---:|---:|")
    for (store_name, name), rows in seen.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"| {store_name} | {name} | {med['online_wall']:.2f} | {med['online_cpu']:.2f} "
            f"| {med['wall']:.2f} | {med['cpu']:.2f} |"
        )


if __name__ == "__main__":
    main()
