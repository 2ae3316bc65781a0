"""The fixed cost of a report: ``abeval report -f json`` on a store of a few thousand events.

    nice -n 10 .venv/bin/python benchmarks/bench_startup.py --runs 15 --nice 10 \\
        --before /tmp/before --record

On a store of about 5,000 events (``bench_report.build_store``, cached in
``benchmarks/data/``) the report does almost no work, so its time is what every
report pays: the interpreter, the imports, opening the store and the fixed cost
of each SQL statement. In one rotation, each run in its own process:

- ``python -c pass`` (the interpreter alone) and ``abeval --help`` (the CLI's imports);
- the libraries a report loads, each imported alone (:data:`FLOOR`: the CLI,
  SQLAlchemy with DuckDB's dialect, scipy's special functions with numpy, and
  scipy.optimize for the power's root), the floor the imports set;
- the report, and ``abeval metrics`` (a command that computes no statistic), as the
  current code runs them and, with ``--before DIR`` (older code: ``git archive
  COMMIT | tar -x -C DIR``), as that code does (``abeval --help`` too).

Medians of wall and CPU seconds (user + system of the child, from its rusage: on a
shared machine the steadier of the two), the fastest run and peak RSS; then the
report's phases, timed inside one process per run (the same rotation): the CLI's
imports, checking the options, opening the store, building the report (with the
time its SQL statements took, summed), writing the JSON, and the modules each
phase imported. Both versions' modules are compiled first (``compileall``), so that
they load from bytecode as an installed package does, whatever
``PYTHONDONTWRITEBYTECODE`` says. The load average is printed before and after. The reports of the
two versions are compared: the same JSON, numbers to a relative 1e-9 (DuckDB
sums in parallel, so the last digits of a sum may differ from run to run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_report import EXPERIMENT, build_store, measure_runs, report_command  # noqa: E402
from measure import code_copy, describe, machine, publish  # noqa: E402

#: One report in this process, phase by phase: seconds of wall and CPU, the
#: modules each phase imported, and the seconds the SQL statements took.
PHASES = r"""
import json, sys, time
marks = [("start", time.perf_counter(), time.process_time(), len(sys.modules))]
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time(), len(sys.modules)))
import abeval.cli
from abeval import api
mark("CLI imports")
options = api.report_options()
mark("options")
store = api.open(sys.argv[1], read_only=True)
mark("open the store")
from sqlalchemy import event
from sqlalchemy.engine import Engine
spent = [0.0, 0]
@event.listens_for(Engine, "before_cursor_execute")
def _before(conn, *_):
    conn.info["t"] = time.perf_counter()
@event.listens_for(Engine, "after_cursor_execute")
def _after(conn, *_):
    spent[0] += time.perf_counter() - conn.info["t"]
    spent[1] += 1
with store:
    report = store.report(sys.argv[2], options)
mark("build the report")
json.dumps(report.to_dict(), indent=2, allow_nan=False)
mark("write the JSON")
phases = {
    name: [t - marks[i][1], c - marks[i][2], n - marks[i][3]]
    for i, (name, t, c, n) in enumerate(marks[1:])
}
phases["total"] = [marks[-1][1] - marks[0][1], marks[-1][2] - marks[0][2], len(sys.modules)]
print(json.dumps({"phases": phases, "sql": spent}))
"""


#: The libraries every report loads, each timed alone: the floor of its start-up.
FLOOR = (
    "import abeval.cli",
    "import duckdb_engine",
    "import scipy.special",
    "import scipy.special, scipy.optimize",
)


def same_report(a: Any, b: Any, path: str = "") -> str | None:
    """Where two reports' JSON differ (numbers to a relative 1e-9), or None."""
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else path
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path} (keys)"
        skip = {"generated_at"}
        found = (same_report(a[k], b[k], f"{path}.{k}") for k in a if k not in skip)
        return next((f for f in found if f), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length)"
        pairs = enumerate(zip(a, b, strict=True))
        found = (same_report(x, y, f"{path}[{i}]") for i, (x, y) in pairs)
        return next((f for f in found if f), None)
    return None if a == b else path


def phase_runs(
    db: Path, versions: dict[str, Path], runs: int, prefix: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The in-process phases of each version's report, ``runs`` times, in rotation."""
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
    for _ in range(runs):
        for name, code in versions.items():
            env = {**os.environ, "PYTHONPATH": str(code)}
            argv = [*prefix, sys.executable, "-c", PHASES, str(db), EXPERIMENT]
            done = subprocess.run(argv, cwd=code, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"phases of {name} failed: {done.stderr.strip()[-800:]}")
            found[name].append(json.loads(done.stdout))
    return found


def phase_table(found: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Median wall and CPU seconds and modules imported per phase, one column per version."""
    names = list(found)
    head = " | ".join(f"{n}: wall s | CPU s | modules" for n in names)
    lines = [f"| phase | {head} |", "|---|" + "---:|---:|---:|" * len(names)]
    for phase in found[names[0]][0]["phases"]:
        cells = []
        for name in names:
            rows = [r["phases"][phase] for r in found[name]]
            wall, cpu = (statistics.median(r[i] for r in rows) for i in (0, 1))
            cells.append(f"{wall:.3f} | {cpu:.3f} | {statistics.median(r[2] for r in rows):.0f}")
        lines.append(f"| {phase} | {' | '.join(cells)} |")
    cells = []
    for name in names:
        sql = [r["sql"] for r in found[name]]
        cells.append(f"{statistics.median(s[0] for s in sql):.3f} | | {sql[0][1]} statements")
    lines.append(f"| of which SQL statements | {' | '.join(cells)} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="runs of each command (rotated)")
    ap.add_argument("--rows", type=int, default=5_000, help="events in the store")
    ap.add_argument("--before", type=code_copy, help="a copy of older code, timed in the same runs")
    ap.add_argument("--nice", type=int, default=0, help="run the commands under nice -n")
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    db = build_store(args.rows)
    prefix = ["nice", "-n", str(args.nice)] if args.nice else []
    versions = {"after": HERE.parent}
    variants = {
        "`python -c pass` (the interpreter alone)": [sys.executable, "-c", "pass"],
        "`abeval --help`": [sys.executable, "-m", "abeval", "--help"],
        **{f"`{code}` alone": [sys.executable, "-c", code] for code in FLOOR},
        "report -f json": report_command(db),
        "`abeval metrics` (no statistic)": [
            sys.executable,
            "-m",
            "abeval",
            "metrics",
            "--db",
            str(db),
        ],
    }
    envs: dict[str, dict[str, str]] = {}
    if args.before:
        before = args.before.resolve()
        versions = {"before": before, **versions}
        for name in ("`abeval --help`", "report -f json", "`abeval metrics` (no statistic)"):
            variants[f"{name}, before"] = variants[name]
            envs[f"{name}, before"] = {"PYTHONPATH": str(before)}
    for code in versions.values():  # from bytecode, as an installed package loads
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "abeval")], check=True)
    load = os.getloadavg()
    times, rss, outs, cpu = measure_runs(variants, args.runs, envs, prefix)
    phases = phase_runs(db, versions, args.runs, prefix)
    after = os.getloadavg()
    info = machine()
    lines = [
        f"### The report's fixed cost on {args.rows:,} events ({info['date']}, "
        f"{args.runs} runs in rotation, medians)",
        "",
        f"Machine: {describe(info)}; load average {load[0]:.1f} before, {after[0]:.1f} after"
        + (f"; under nice -n {args.nice}" if args.nice else ""),
        "",
        "| command | median wall s | min wall s | median CPU s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, t in times.items():
        lines.append(
            f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | "
            f"{statistics.median(cpu[name]):.3f} | {statistics.median(rss[name]):.0f} |"
        )
    lines += ["", "Phases of the report, in one process:", "", *phase_table(phases)]
    if args.before:
        where = same_report(
            json.loads(outs["report -f json, before"]), json.loads(outs["report -f json"])
        )
        lines += ["", f"Reports before and after: {'the same' if where is None else where}."]
    publish(lines, args.record)


if __name__ == "__main__":
    main()
