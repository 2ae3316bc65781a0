"""Time the report's beyond-accuracy statement against its ranking kernel, on DuckDB.

One process opens the replay of the default report (the shared tables kept, as
``abeval report`` keeps them), then runs, alternated, round after round:

- the ranking kernel's statement (precision, recall, MAP, NDCG, MRR, hit rate at
  5 and 10, AUC: what the report sends);
- the beyond-accuracy statement (coverage, Gini, entropy, novelty and diversity
  at 5 and 10) of this tree;
- with ``--before DIR``, the same statement as the abeval package under ``DIR``
  writes it (an export of an older commit), for the same inputs.

Per statement: wall and CPU seconds (the process's user + system time, DuckDB's
threads included). The two beyond-accuracy statements must give the same rows
(to 1e-9): the script stops otherwise. Run under ``nice``; the store comes from
bench_report's simulator (cached in data/).

    python benchmarks/bench_beyond.py --rows 2000000 --rounds 5 --before /tmp/old

``--data-dir`` reads the stores of ``bench_report.py --data-dir`` there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_report import EXPERIMENT, build_store  # noqa: E402
from measure import code_copy  # noqa: E402

# Prints the beyond-accuracy statement's CTEs and SELECT as the abeval on sys.path
# writes them, for the inputs the replay gives (argv: reference users, the
# metrics kept: a comma-separated list of names, or empty for all).
_DUMP = r"""
import dataclasses, json, sys
from abeval.analysis.replay import default_metrics
from abeval import metrics
from abeval.metrics import BeyondInputs, beyond_query
try:
    from abeval.store.sql.replay_parts import BEYOND_RELATIONS
except ImportError:  # an abeval before the SQL builders moved to abeval.store.sql
    from abeval.store.replay_sql import BEYOND_RELATIONS
# parse_metrics before it was named parse_offline_metrics
parse = getattr(metrics, "parse_offline_metrics", None) or metrics.parse_metrics
names = sys.argv[2].split(",") if sys.argv[2] else None
specs = [s for s in parse(default_metrics()) if s.kind == "beyond"
         and (names is None or s.name in names)]
# as the replay gives them: list ids unique across arms, where the code knows it
keyed = {"list_key": ("list_id",)} if "list_key" in {
    f.name for f in dataclasses.fields(BeyondInputs)} else {}
inputs = BeyondInputs(**BEYOND_RELATIONS, similarity="cooccurrence",
                      reference_users=int(sys.argv[1]), **keyed)
q = beyond_query(specs, inputs)
print(json.dumps({"ctes": q.ctes, "select": q.select}))
"""


def dump(tree: Path | None, reference_users: int, names: str) -> dict[str, str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    out = subprocess.run(
        [sys.executable, "-c", _DUMP, str(reference_users), names],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tree) if tree is not None else None,
    )
    return dict(json.loads(out.stdout))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(source: Any, ctes: str, select: str) -> tuple[float, float, list[dict[str, Any]]]:
    c0, w0 = cpu(), time.perf_counter()
    rows = source.rows(ctes, select)
    return time.perf_counter() - w0, cpu() - c0, rows


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    """The largest difference between two result sets keyed by (metric, group)."""
    key = lambda r: (int(r["metric_index"]), str(r["grp"]))  # noqa: E731
    x, y = {key(r): r for r in a}, {key(r): r for r in b}
    if x.keys() != y.keys():
        raise SystemExit(f"different rows: {sorted(x.keys() ^ y.keys())[:5]}")
    worst = 0.0
    for k, r in x.items():
        for col, v in r.items():
            if col in ("grp", "metric_index"):
                continue
            w = y[k][col]
            if v is None or w is None:
                if v is not w:
                    raise SystemExit(f"{k} {col}: {v} against {w}")
                continue
            diff = abs(float(v) - float(w))
            worst = max(worst, diff / max(1.0, abs(float(v))))
    if worst > 1e-9:
        raise SystemExit(f"beyond-accuracy rows differ by {worst:.3g}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=code_copy, help="a tree holding an older abeval package")
    parser.add_argument(
        "--metrics", default="", help="only these beyond-accuracy metrics (e.g. diversity)"
    )
    parser.add_argument("--data-dir", type=Path, help="where the stores are (bench_report's)")
    args = parser.parse_args()

    from abeval.analysis.replay import DEFAULT_GAINS, default_metrics
    from abeval.metrics import parse_offline_metrics, ranking_query
    from abeval.store import open_store
    from abeval.store.sql.replay import open_replay

    db = build_store(args.rows) if args.data_dir is None else build_store(args.rows, args.data_dir)
    ranking = ranking_query(
        [s for s in parse_offline_metrics(default_metrics()) if s.kind == "ranking"],
        lists="r_lists",
    )
    store = open_store(str(db))
    try:
        with store.connect() as conn, open_replay(conn, EXPERIMENT, DEFAULT_GAINS) as source:
            users = int(source.rows("", "SELECT COUNT(*) AS n FROM population")[0]["n"])
            statements = {"kernel": (ranking.ctes, ranking.group_query())}
            after = dump(None, users, args.metrics)
            statements["beyond"] = (after["ctes"], after["select"])
            if args.before is not None:
                before = dump(args.before, users, args.metrics)
                statements["beyond before"] = (before["ctes"], before["select"])
            times: dict[str, list[tuple[float, float]]] = {n: [] for n in statements}
            results: dict[str, list[dict[str, Any]]] = {}
            for r in range(args.rounds):
                names = list(statements) if r % 2 == 0 else list(reversed(statements))
                for name in names:
                    wall, used, rows = timed(source, *statements[name])
                    times[name].append((wall, used))
                    results[name] = rows
            worst = same(results["beyond"], results["beyond before"]) if args.before else math.nan
    finally:
        store.close()
    print(f"{args.rows:,} events, {args.rounds} alternated rounds, load {os.getloadavg()[0]:.1f}")
    kernel = statistics.median(c for _, c in times["kernel"])
    for name, t in times.items():
        wall = statistics.median(w for w, _ in t)
        used = statistics.median(c for _, c in t)
        print(
            f"{name:14s} wall {wall:6.2f} s  CPU {used:6.2f} s  CPU / kernel {used / kernel:5.2f}"
            f"  (CPU runs: {', '.join(f'{c:.2f}' for _, c in t)})"
        )
    if args.before is not None:
        print(f"largest relative difference, before against after: {worst:.2g}")


if __name__ == "__main__":
    main()
