"""Time the default report's off-policy section alone, this code against another copy.

The section as the report runs it without a window: the online pass has kept the
population (here made once per run, untimed, as a temporary table named as the
online pass names it), then :func:`abeval.analysis.ope.ope_results` runs with it;
numpy and scipy are imported first, untimed, as the report's online section has.
Each run is a fresh process on a store (copy it: nothing is written, but keep the
team's stores untouched); this code and ``--before`` (a ``git archive`` copy of
another commit) alternate, ``--runs`` times each. Printed: per store and code,
the median wall and CPU seconds of the section (CPU of the whole process, every
DuckDB thread counted) and the statements it sent, with the machine's load::

    python benchmarks/bench_ope_section.py STORE [STORE ...] --before DIR --runs 3
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
from measure import code_copy, describe, machine  # noqa: E402

#: Run inside the child, with the code tree first on sys.path: prints one JSON line.
CHILD = """
import json, resource, sys, time
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from abeval.analysis.ope import OpeOptions, ope_results
from abeval.store import open_store
from abeval.store.sql.population import population_parts
# Loaded by the report's online section before this one: not this section's cost.
import numpy, scipy.stats

store_path, experiment, control, treatments = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sent = []

@event.listens_for(Engine, "before_cursor_execute")
def before(conn, cursor, statement, *_):
    sent.append(statement)

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

with open_store(store_path, read_only=True) as store, store.connect() as conn:
    table = "abeval_online_population"
    made = population_parts().sql("SELECT user_id, arm, first_ts FROM population")
    conn.execute(text(f"CREATE TEMP TABLE {table} AS {made}"), {"experiment": experiment})
    sent.clear()
    c0, t0 = cpu(), time.perf_counter()
    found = ope_results(conn, experiment, control, treatments, OpeOptions(), 0.05,
                        population=table)
    wall, used = time.perf_counter() - t0, cpu() - c0
print(json.dumps({"wall": wall, "cpu": used, "statements": len(sent),
                  "arms": [a.impressions for a in found.arms],
                  "skipped": len(getattr(found, "not_estimated", ())),
                  "directions": len(found.directions)}))
"""


def run(code: Path, store: Path, args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [
        sys.executable,
        "-c",
        CHILD,
        str(store.resolve()),
        args.experiment,
        args.control,
        *args.treatment,
    ]
    if args.nice:
        cmd = ["nice", "-n", str(args.nice), *cmd]
    # ``-c`` puts the working folder first on sys.path: the code's own folder.
    done = subprocess.run(
        cmd, env=env, cwd=code, capture_output=True, text=True, timeout=3600, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{code} on {store} failed: {done.stderr.strip()[-1500:]}")
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--before", type=code_copy, required=True, help="a copy of the code to compare")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--experiment", default="home-reco-v2")
    ap.add_argument("--control", default="control")
    ap.add_argument("--treatment", nargs="+", default=["treatment"])
    ap.add_argument("--nice", type=int, default=10)
    args = ap.parse_args()
    codes = {"before": args.before.resolve(), "after": HERE.parent}
    print(describe(machine()))
    print(f"load at start: {os.getloadavg()[0]:.1f}")
    print()
    print("| store | code | wall s | CPU s | statements | wall / before | CPU / before |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for store in args.stores:
        seen: dict[str, list[dict[str, float]]] = {k: [] for k in codes}
        for _ in range(args.runs):
            for name, code in codes.items():
                seen[name].append(run(code, store, args))
        base = {k: statistics.median(r[k] for r in seen["before"]) for k in ("wall", "cpu")}
        for name in codes:
            wall = statistics.median(r["wall"] for r in seen[name])
            used = statistics.median(r["cpu"] for r in seen[name])
            sent = seen[name][0]["statements"]
            print(
                f"| {store.name} | {name} | {wall:.2f} | {used:.2f} | {sent:.0f} "
                f"| {wall / base['wall']:.2f} | {used / base['cpu']:.2f} |"
            )
        same = {
            json.dumps({k: r[k] for k in ("arms", "skipped", "directions")})
            for r in [*seen["before"], *seen["after"]]
        }
        print(
            f"<!-- {store.name}: the same arms, skipped and directions in every run: "
            f"{len(same) == 1} -->"
        )
    print(f"\nload at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
