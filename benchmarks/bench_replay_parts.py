"""Time the replay's statements on a store, this code against a copy of older code.

The replay runs as the report runs it (the population from the online pass handed
over), once per process, with the ranking metrics only (the beyond-accuracy
statement is timed elsewhere). Each of its statements is timed in wall and CPU
seconds (the process's, every thread); the parts are those of issue 23's profile:
``ranked`` (the ranked lists), ``r_lists`` (the per-list pass), ``r_items``
(catalogue and interactions), ``arms`` (the arms' counts) and ``kernel`` (the
ranking metrics), plus ``r_rel`` (relevance). Runs alternate between the codes;
the table gives medians.

    python benchmarks/bench_replay_parts.py STORE --before DIR --runs 3 [--record]

DIR is ``git archive COMMIT | tar -x -C DIR``; STORE is read, not written (each run
works on temporary tables of its own connection).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_report import report_difference  # noqa: E402
from measure import code_copy, describe, machine, publish  # noqa: E402

EXPERIMENT = "home-reco-v2"
PARTS = ("ranked", "r_lists", "r_items", "arms", "kernel")

# Run in a child: the replay of the report, each statement timed, the parts' sums as JSON.
CHILD = r"""
import json, re, resource, sys, time
from sqlalchemy import event
from sqlalchemy.engine import Engine

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

sums, started = {}, []

@event.listens_for(Engine, "before_cursor_execute")
def before(*_):
    started.append((time.perf_counter(), cpu()))

@event.listens_for(Engine, "after_cursor_execute")
def after(conn, cursor, statement, *_):
    wall, used = started.pop()
    made = re.match(r"CREATE (?:TEMP |TEMPORARY )?TABLE abeval_replay_(\w+)", statement)
    part = (made.group(1) if made else "kernel" if "k_user_values" in statement
            else "arms" if "r_not_shown" in statement else None)
    if part:
        w, c = sums.get(part, (0.0, 0.0))
        sums[part] = (w + time.perf_counter() - wall, c + cpu() - used)

from abeval.analysis.replay import default_metrics, replay
from abeval.store import open_store
from abeval.store.sql.online_pass import shared
from abeval.store.shared_ctes import drop

beyond = ("coverage", "gini", "entropy", "novelty", "diversity")
metrics = [m for m in default_metrics() if not m.startswith(beyond)]
store = open_store(sys.argv[1])
with store.connect() as conn:
    _, temporary = shared(conn, sys.argv[2], 14)
    population = next(t for t in temporary if t.endswith("_population"))
    sums.clear()
    result = replay(conn, sys.argv[2], metrics=metrics, population=population)
    drop(conn, temporary)
print(json.dumps({"parts": sums, "result": result.to_dict()}, default=str))
"""


def run_once(store: Path, code: Path | None) -> dict[str, object]:
    env = dict(os.environ)
    cwd = HERE.parent
    if code is not None:  # the older code first on the path, run from outside this tree
        env["PYTHONPATH"] = str(code.resolve())
        cwd = code.resolve()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(store.resolve()), EXPERIMENT],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )
    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--before", type=code_copy, required=True, help="a copy of the older code")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    codes = {"before": args.before, "now": None}
    taken: dict[str, list[dict[str, list[float]]]] = {name: [] for name in codes}
    results: dict[str, object] = {}
    loads = [load()]
    for _ in range(args.runs):
        for name, code in codes.items():
            found = run_once(args.store, code)
            taken[name].append(found["parts"])  # type: ignore[arg-type]
            results[name] = found["result"]
        loads.append(load())
    same = report_difference(json.dumps(results["before"]), json.dumps(results["now"]))

    def median(name: str, part: str, i: int) -> float:
        return statistics.median(run[part][i] if part in run else 0.0 for run in taken[name])

    lines = [
        f"### Replay statements on {args.store.name} ({machine()['date']}, "
        f"{args.runs} runs each, alternating, median)",
        "",
        f"Machine: {describe(machine())}; load average (1, 5, 15 min) during the runs: "
        f"{', '.join(loads)}",
        "",
        "| part | before wall s | now wall s | before CPU s | now CPU s | CPU now / before |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    totals = {name: [0.0, 0.0] for name in codes}
    for part in (*PARTS, "r_rel"):
        row = [median(name, part, i) for name in codes for i in (0, 1)]
        if part in PARTS:
            for name, (w, c) in zip(codes, (row[0:2], row[2:4]), strict=True):
                totals[name][0] += w
                totals[name][1] += c
        bw, bc, nw, nc = row
        lines.append(
            f"| {part} | {bw:.2f} | {nw:.2f} | {bc:.2f} | {nc:.2f} | {nc / bc if bc else 0:.2f} |"
        )
    (bw, bc), (nw, nc) = totals["before"], totals["now"]
    lines.append(
        f"| **the five parts** | {bw:.2f} | {nw:.2f} | {bc:.2f} | {nc:.2f} | {nc / bc:.2f} |"
    )
    lines += ["", f"Every number of the replay, before vs now: largest relative difference {same}."]
    publish(lines, args.record)


if __name__ == "__main__":
    main()
