"""Offline evaluation benchmark: ``abeval evaluate`` against pytrec_eval and ranx, end to end.

Data (generated once into ``benchmarks/data/``, which git ignores): 100,000 users
× 100 recommended items = 10M rows (``eval_recs_10M.parquet``: user_id, item_id,
score, with ties in score) and a truth file of 10 graded items per user, about
3 of them among the recommended (``eval_truth.csv``: user_id, item_id,
relevance 1..3).

Each run starts three fresh processes that read the same two files and compute
P@10, R@10, AP@10, NDCG@10 and MRR, everything included (interpreter start,
imports, reading, building each tool's input, evaluating, averaging):

* ``abeval``: ``python -m abeval evaluate -t TRUTH -r RECS -m ... --format json``;
* ``pytrec_eval``: pyarrow reads the files, a loop builds the run and qrels
  dicts, ``RelevanceEvaluator`` (trec_eval's C code) evaluates;
* ``ranx``: pandas reads the files, ``Qrels.from_df`` / ``Run.from_df`` build
  its inputs, ``ranx.evaluate`` (numba) evaluates.

With ``--before DIR`` (a copy of the older code: ``git archive COMMIT | tar -x -C
DIR``) a fourth process, ``abeval (before)``, runs the same command from that
copy, so that old and new code meet the same load; the ratios of each abeval to
pytrec_eval and ranx, wall and CPU, are printed for both, and a ``phases (before)``
process gives that copy's phases beside the current code's.

The order rotates between runs so that background load hits all alike. Printed:
median and minimum wall time, the ratio to abeval (> 1: abeval is faster), the
median CPU seconds (user + system, every thread) and peak RSS of each process
(``wait4``), and the metric means of each tool, which must agree with abeval's.
Each run also times, in the same rotation, ``python -c pass`` (the interpreter's
own start), ``abeval --help`` five times, and one ``benchmarks/evaluate_phases.py``
process: abeval's evaluation phase by phase (imports, reading and checking each
file, the top K, the metric SQL, output; wall and CPU), whose medians are printed
too. The load average before and after is printed: on a shared machine CPU
seconds move less than wall seconds. ``--record`` appends the tables with a line
describing the machine to ``benchmarks/RESULTS.md``.

    python benchmarks/bench_evaluate.py                 # generate if missing, 3 runs
    python benchmarks/bench_evaluate.py --runs 5 --record
    python benchmarks/bench_evaluate.py --users 10000   # a smaller data set
    python benchmarks/bench_evaluate.py --users 30000 --before /tmp/before --runs 5

ranx is not a dependency of abeval: ``pip install ranx`` first (it is skipped,
with a note, when missing), or give ``--ranx-python`` an interpreter that has
ranx, pandas and pyarrow.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))
from measure import code_copy, describe, machine, run_measured  # noqa: E402

RESULTS = HERE / "RESULTS.md"
BEFORE = "abeval (before)"
BEFORE_PHASES = "phases (before)"
TOOLS = ("duckdb", "pytrec_eval", "ranx", "numpy")
METRICS = "precision@10,recall@10,ap@10,ndcg@10,mrr"

GENERATE = r"""
import sys
import numpy as np, pyarrow as pa, pyarrow.csv as pc, pyarrow.parquet as pq
users, recs_path, truth_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
per_list, catalogue = 100, 50_000
rng = np.random.default_rng(0)
base = rng.integers(0, catalogue, size=users)
steps = rng.integers(1, 50, size=(users, per_list)).cumsum(axis=1)  # distinct items per list
items = (base[:, None] + steps) % catalogue
uid = np.char.add("u", np.arange(users).astype(str))
scores = np.round(rng.random((users, per_list)), 3)  # ties in score
pq.write_table(pa.table({
    "user_id": np.repeat(uid, per_list),
    "item_id": np.char.add("i", items.ravel().astype(str)),
    "score": scores.ravel(),
}), recs_path)
picked = np.take_along_axis(items, rng.integers(0, per_list, size=(users, 3)), 1)
others = rng.integers(0, catalogue, size=(users, 7))
truth_items = np.concatenate([picked, others], axis=1)
tu, ti, rel, seen = [], [], [], set()
grades = rng.integers(1, 4, size=truth_items.shape)
for u in range(users):
    for j in range(truth_items.shape[1]):
        key = (u, int(truth_items[u, j]))
        if key in seen:
            continue
        seen.add(key)
        tu.append(uid[u]); ti.append("i%d" % key[1]); rel.append(int(grades[u, j]))
pc.write_csv(pa.table({"user_id": tu, "item_id": ti, "relevance": rel}), truth_path)
"""

PYTREC = r"""
import json, statistics, sys
import pyarrow.csv as pc, pyarrow.parquet as pq, pytrec_eval
recs, truth = sys.argv[1], sys.argv[2]
t = pq.read_table(recs)
run = {}
for u, i, s in zip(t.column("user_id").to_pylist(), t.column("item_id").to_pylist(),
                   t.column("score").to_pylist()):
    d = run.get(u)
    if d is None:
        d = run[u] = {}
    d[i] = float(s)
q = pc.read_csv(truth, convert_options=pc.ConvertOptions(
    column_types={"user_id": "string", "item_id": "string"}))
qrels = {}
for u, i, r in zip(q.column("user_id").to_pylist(), q.column("item_id").to_pylist(),
                   q.column("relevance").to_pylist()):
    qrels.setdefault(u, {})[i] = int(r)
names = {"P_10": "precision@10", "recall_10": "recall@10", "map_cut_10": "ap@10",
         "ndcg_cut_10": "ndcg@10", "recip_rank": "mrr"}
res = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
print(json.dumps({names[m]: statistics.fmean(v[m] for v in res.values()) for m in names}))
"""

RANX = r"""
import json, sys
import pandas as pd
from ranx import Qrels, Run, evaluate
recs, truth = sys.argv[1], sys.argv[2]
ids = {"user_id": object, "item_id": object}  # ranx wants object columns (pandas 3: str)
r = pd.read_parquet(recs).astype(ids)
q = pd.read_csv(truth, dtype={"user_id": str, "item_id": str, "relevance": "int64"}).astype(ids)
qrels = Qrels.from_df(q, q_id_col="user_id", doc_id_col="item_id", score_col="relevance")
run = Run.from_df(r, q_id_col="user_id", doc_id_col="item_id", score_col="score")
names = {"precision@10": "precision@10", "recall@10": "recall@10", "map@10": "ap@10",
         "ndcg@10": "ndcg@10", "mrr": "mrr"}
out = evaluate(qrels, run, list(names))
print(json.dumps({names[k]: float(v) for k, v in out.items()}))
"""


@dataclass
class Sample:
    """One tool's measured runs."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_checked(
    argv: list[str], timeout: float, sample: Sample | None = None, cwd: Path = REPO
) -> str:
    """Run ``argv`` in ``cwd``, add its wall seconds, CPU seconds and peak RSS (MiB)
    to ``sample``, return its stdout; a failure raises."""
    cpu = children_cpu()
    m = run_measured(argv, timeout, cwd=cwd, env={"PYTHONPATH": str(cwd)})
    if m.timed_out:
        raise RuntimeError(f"{argv[:3]} timed out after {timeout:.0f} s")
    if m.code != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed ({m.code}): {m.err.strip()[-2000:]}")
    if sample is not None:
        sample.wall.append(m.seconds)
        sample.cpu.append(children_cpu() - cpu)
        sample.rss.append(m.rss_mib)
    return m.out


def ensure_data(users: int, python: str, force: bool) -> tuple[Path, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    tag = f"{users * 100 / 1e6:g}M"
    recs, truth = DATA / f"eval_recs_{tag}.parquet", DATA / f"eval_truth_{tag}.csv"
    if force or not (recs.exists() and truth.exists()):
        print(f"generating {recs.name} and {truth.name} ...", file=sys.stderr)
        t0 = time.perf_counter()
        subprocess.run(
            [python, "-c", GENERATE, str(users), str(recs), str(truth)], check=True, cwd=REPO
        )
        print(f"  done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return recs, truth


def have_module(python: str, name: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([python, "-c", code]).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100_000, help="users (100 items each)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--ranx-python", help="interpreter for ranx (default: --python)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--only", choices=("abeval", "pytrec_eval", "ranx"), action="append")
    parser.add_argument("--force", action="store_true", help="regenerate the data")
    parser.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    parser.add_argument(
        "--before",
        type=code_copy,
        help="a copy of older code (git archive COMMIT | tar -x -C DIR), timed alongside",
    )
    args = parser.parse_args()

    recs, truth = ensure_data(args.users, args.python, args.force)
    ranx_python = args.ranx_python or args.python
    command = [args.python, "-m", "abeval", "evaluate", "-t", str(truth), "-r", str(recs),
               "-m", METRICS, "--format", "json"]  # fmt: skip
    tools: dict[str, list[str]] = {
        "abeval": command,
        "pytrec_eval": [args.python, "-c", PYTREC, str(recs), str(truth)],
        "ranx": [ranx_python, "-c", RANX, str(recs), str(truth)],
    }  # fmt: skip
    notes: list[str] = []
    if not have_module(ranx_python, "ranx"):
        del tools["ranx"]
        notes.append("ranx is not installed (`pip install ranx`): skipped")
    if args.only:
        tools = {k: v for k, v in tools.items() if k in args.only}
    cwds = {name: REPO for name in tools}
    if args.before:
        tools[BEFORE] = command
        cwds[BEFORE] = args.before.resolve()
    # Warm the page cache (and ranx's numba cache) once, untimed.
    for path in (recs, truth):
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
    extra = {
        "python -c pass": [args.python, "-c", "pass"],
        "abeval --help": [args.python, "-m", "abeval", "--help"],
        "phases": [args.python, str(HERE / "evaluate_phases.py"), str(truth), str(recs), METRICS],
    }
    if args.before:
        extra[BEFORE_PHASES] = extra["phases"]
        cwds[BEFORE_PHASES] = args.before.resolve()
    samples = {k: Sample() for k in [*tools, *extra]}
    phases: list[dict[str, list[float]]] = []
    before_phases: list[dict[str, list[float]]] = []
    means: dict[str, dict[str, float]] = {}
    order = [*tools, *extra]
    load_before = os.getloadavg()
    for r in range(args.runs):
        for name in order[r % len(order) :] + order[: r % len(order)]:
            argv = tools.get(name) or extra[name]
            for _ in range(5 if name == "abeval --help" else 1):
                out = run_checked(argv, args.timeout, samples[name], cwds.get(name, REPO))
            if name == "phases":
                phases.append(json.loads(out))
            elif name == BEFORE_PHASES:
                before_phases.append(json.loads(out))
            elif name in tools:
                data = json.loads(out)
                if name in ("abeval", BEFORE):
                    data = {m["metric"]: m["value"] for m in data["metrics"]}
                means[name] = data
            print(f"run {r + 1}: {name:14s} {samples[name].wall[-1]:7.2f} s", file=sys.stderr)
    load = (load_before, os.getloadavg())
    table = report(args, truth, tools, samples, phases, means, notes, load, before_phases)
    print(table)
    if args.record:
        stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        section = (
            f"\n## Offline evaluation: `abeval evaluate` vs pytrec_eval and ranx ({stamp})\n\n"
            f"Machine: {describe(machine(TOOLS))}. Command: `python benchmarks/bench_evaluate.py "
            f"--users {args.users} --runs {args.runs}"
            + (f" --before {args.before.name}" if args.before else "")
            + " --record`. Ratios come from the same run; "
            "× abeval time > 1 means abeval is faster.\n\n" + table + "\n"
        )
        new = not RESULTS.exists()
        with open(RESULTS, "a") as f:
            if new:
                f.write("# Benchmark results\n")
            f.write(section)
        print(f"appended to {RESULTS}", file=sys.stderr)
    return 0


def report(
    args: argparse.Namespace,
    truth: Path,
    tools: dict[str, list[str]],
    samples: dict[str, Sample],
    phases: list[dict[str, list[float]]],
    means: dict[str, dict[str, float]],
    notes: list[str],
    load: tuple[tuple[float, float, float], tuple[float, float, float]],
    before_phases: list[dict[str, list[float]]],
) -> str:
    """The Markdown tables: tools, abeval's phases (and the older code's, with
    ``--before``), start-up; the means compared."""
    med = statistics.median
    base = med(samples["abeval"].wall) if "abeval" in tools else None
    with open(truth) as f:
        truth_rows = sum(1 for _ in f) - 1
    lines = [
        f"{args.users:,} users × 100 items ({args.users * 100:,} rows, Parquet) + truth CSV "
        f"({truth_rows:,} rows); {METRICS}; {args.runs} runs, "
        "end to end in fresh processes; load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in load[0])} before, "
        f"{', '.join(f'{x:.1f}' for x in load[1])} after",
        "",
        "| tool | median s | min s | × abeval time | median CPU s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in tools:
        s = samples[name]
        ratio = f"{med(s.wall) / base:.2f}" if base else "–"
        lines.append(
            f"| {name} | {med(s.wall):.2f} | {min(s.wall):.2f} | {ratio} | {med(s.cpu):.2f} | "
            f"{med(s.rss):.0f} |"
        )
    lines += ratios(tools, samples)
    lines += ["", "abeval's run, phase by phase (`benchmarks/evaluate_phases.py`, medians):", ""]
    runs = {"phases": phases, BEFORE_PHASES: before_phases}
    runs = {name: found for name, found in runs.items() if found}
    head = " | ".join(f"{n} wall s | {n} CPU s" for n in runs)
    lines += [f"| phase | {head} |", "|---|" + "---:|" * 2 * len(runs)]
    start = samples["python -c pass"]
    lines.append(
        "| interpreter start (`python -c pass`) | "
        + " | ".join(f"{med(start.wall):.3f} | {med(start.cpu):.3f}" for _ in runs)
        + " |"
    )
    names = list(dict.fromkeys(ph for found in runs.values() for ph in found[0]))
    for phase in names:
        cells = []
        for found in runs.values():
            wall = med(p.get(phase, [0.0, 0.0])[0] for p in found)
            cpu = med(p.get(phase, [0.0, 0.0])[1] for p in found)
            cells.append(f"{wall:.3f} | {cpu:.3f}")
        lines.append(f"| {phase} | {' | '.join(cells)} |")
    whole = [f"{med(samples[n].wall):.3f} | {med(samples[n].cpu):.3f}" for n in runs]
    lines.append(f"| whole phases process | {' | '.join(whole)} |")
    helps = samples["abeval --help"]
    lines += [
        "",
        f"- `abeval --help`: median {med(helps.wall):.3f} s, min {min(helps.wall):.3f} s "
        f"({len(helps.wall)} runs, CPU {med(helps.cpu):.3f} s); target under 0.3 s",
    ]
    if "abeval" in means:
        ours = means["abeval"]
        for name, theirs in means.items():
            if name == "abeval":
                continue
            diffs = {m: abs(ours[m] - theirs[m]) for m in ours if m in theirs}
            worst = max(diffs, key=lambda m: diffs[m])
            lines.append(
                f"- means vs {name}: largest difference {diffs[worst]:.1e} ({worst})"
                + ("" if diffs[worst] < 1e-9 else f"; abeval {ours[worst]:.6f}, "
                   f"{name} {theirs[worst]:.6f}")
            )  # fmt: skip
        lines.append("- abeval means: " + ", ".join(f"{m} {v:.6f}" for m, v in ours.items()))
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines)


def ratios(tools: dict[str, list[str]], samples: dict[str, Sample]) -> list[str]:
    """How many times faster each abeval is than each other tool (medians), wall and CPU."""
    med = statistics.median
    ours = [n for n in ("abeval", BEFORE) if n in tools]
    others = [n for n in tools if n not in ours]
    if not ours or not others:
        return []
    head = " | ".join(f"{o} wall | {o} CPU" for o in others)
    lines = ["", f"| other tool's time / abeval's | {head} |", "|---|" + "---:|" * 2 * len(others)]
    for name in ours:
        cells = []
        for other in others:
            cells.append(f"{med(samples[other].wall) / med(samples[name].wall):.2f}×")
            cells.append(f"{med(samples[other].cpu) / med(samples[name].cpu):.2f}×")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
