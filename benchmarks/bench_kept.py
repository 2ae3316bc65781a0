"""Kept summaries (issue 32.1): ``abeval agreement`` and ``abeval forecast`` as a
user runs them, recomputed from the events and then read from the kept summaries,
in one run.

1. The demo store (``--demo``, default ``demo/demo.duckdb``; ``make demo``),
   copied twice: on one copy ``abeval agreement`` twice, on the other ``abeval
   forecast --offline-lift 0.031 --offline-se 0.008`` twice. The first run of each
   recomputes everything (and keeps it), the second reads the kept summaries.
2. Stores of ``--counts`` small simulated experiments (two arms of ``--users``
   users, an exposure and an impression each: ``bench_experiments.write_events``),
   ingested fresh: ``abeval agreement`` cold (recompute) and warm (kept).

Each command runs as a subprocess (``python -m abeval``); the table gives its
wall and CPU seconds (user + system, from ``wait4``) and checks that the kept
run's JSON equals the recompute's (numbers to 1e-9, the time of writing and the
store's path aside). ``--record`` appends the tables to benchmarks/RESULTS.md.

    python benchmarks/bench_kept.py --counts 100,300,1000 --record
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_experiments import write_events  # noqa: E402
from measure import describe, machine, publish  # noqa: E402

TIMEOUT = 3600.0
FORECAST = ["forecast", "--offline-lift", "0.031", "--offline-se", "0.008"]
#: What differs between two runs of one command, whatever they compute.
VOLATILE = frozenset({"generated_at", "store", "history"})


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Run ``python -m abeval argv``: wall seconds, CPU seconds, standard output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "abeval", *argv], stdout=out, stderr=err, cwd=HERE.parent
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"abeval {' '.join(argv)} failed: {err.read().decode()[-2000:]}")
        return wall, usage.ru_utime + usage.ru_stime, out.read().decode()


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ (numbers beyond 1e-9, relative or absolute)."""
    if isinstance(a, float) or isinstance(b, float):
        same = isinstance(a, (int, float)) and isinstance(b, (int, float))
        return [] if same and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) else [path]
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - VOLATILE
        return [d for k in sorted(keys) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]  # fmt: skip
    return [] if a == b else [path]


def cold_and_warm(label: str, db: Path, argv: list[str]) -> str:
    """One table row: the command on ``db`` recomputed, then kept."""
    command = [*argv, "--db", str(db), "--format", "json"]
    cold_wall, cold_cpu, cold = timed(command)
    warm_wall, warm_cpu, warm = timed(command)
    found = differences(json.loads(cold), json.loads(warm))
    equal = "yes" if not found else f"NO ({', '.join(found[:3])})"
    return (
        f"| {label} | {cold_wall:.1f} | {cold_cpu:.1f} | {warm_wall:.1f} | {warm_cpu:.1f} "
        f"| {cold_wall / warm_wall:.0f}× | {equal} |"
    )


def demo_rows(demo: Path, work: Path) -> list[str]:
    rows = []
    for label, argv in (("demo: agreement", ["agreement"]), ("demo: forecast", FORECAST)):
        db = work / f"{argv[0]}.duckdb"
        shutil.copy(demo, db)
        subprocess.run([sys.executable, "-m", "abeval", "migrate", "--db", str(db)],
                       check=True, capture_output=True)  # fmt: skip
        rows.append(cold_and_warm(label, db, argv))
        print(rows[-1], flush=True)
    return rows


def many_rows(counts: list[int], users: int, work: Path) -> list[str]:
    rows = []
    for n in counts:
        events, db = work / f"events-{n}.csv", work / f"many-{n}.duckdb"
        write_events(events, n, users)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "abeval", "ingest", str(events), "--db", str(db)],
            check=True,
            capture_output=True,
        )
        print(f"ingested {n} experiments in {time.perf_counter() - t0:.0f} s", flush=True)
        rows.append(cold_and_warm(f"{n:,} experiments: agreement", db, ["agreement"]))
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", type=Path, default=HERE.parent / "demo" / "demo.duckdb")
    ap.add_argument("--counts", default="100,300")
    ap.add_argument("--users", type=int, default=10, help="users per arm of each experiment")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    info = machine()
    counts = [int(c) for c in args.counts.split(",") if c]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = demo_rows(args.demo, work) if args.demo.exists() else []
        rows += many_rows(counts, args.users, work)
    load = os.getloadavg()[0]
    publish(
        [
            f"## Kept summaries: recompute vs kept ({info['date']})",
            "",
            f"{describe(info)}; load average {load:.1f} at the end (a shared machine: "
            "CPU seconds are the fairer measure). Cold: the first run, which computes "
            "from the events and keeps the summaries; warm: the same command again, "
            "reading them. Equal: the warm JSON equals the cold one to 1e-9.",
            "",
            "| command | cold wall s | cold CPU s | warm wall s | warm CPU s | speed-up "
            "(wall) | equal |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ],
        args.record,
    )


if __name__ == "__main__":
    main()
