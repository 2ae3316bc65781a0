"""Time ``abeval experiments`` and ``abeval agreement`` against the number of
experiments in the store (issue 25: both were quadratic in it).

For each count N, a CSV of N experiments (two arms, ``--users`` users per arm, an
exposure and an impression per user) is ingested into a fresh DuckDB store, then
``abeval experiments --db S`` (and, for the counts in ``--agreement-counts``,
``abeval agreement --db S --format json -o -``) runs as a subprocess ``--runs``
times; the script prints the median wall time of each, and the time per
experiment. ``--baseline SRC`` runs the same steps with the abeval of another
source tree (a checkout of an earlier commit, put first on ``PYTHONPATH``), each
side on its own stores, interleaved run by run, so that both sides meet the same
machine load. ``--record`` appends the table to ``benchmarks/RESULTS.md``.

    python benchmarks/bench_experiments.py --counts 1000,4000,10000 \\
        --agreement-counts 250,1000 --baseline /tmp/abeval-main --record
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_source import abeval, ok  # noqa: E402
from measure import machine, run_measured  # noqa: E402

TIMEOUT = 1800.0


def write_events(path: Path, experiments: int, users: int) -> int:
    """N experiments, two arms of ``users`` users, an exposure and an impression each."""
    rows = 0
    with path.open("w") as f:
        f.write("experiment,arm,user_id,ts,event_type,request_id,item_id,position\n")
        for e in range(experiments):
            for arm in ("control", "treatment"):
                for u in range(users):
                    user = f"{arm[0]}{u}"
                    f.write(f"exp-{e:05d},{arm},{user},2024-05-01T08:00:00,exposure,,,\n")
                    f.write(f"exp-{e:05d},{arm},{user},2024-05-01T08:01:00,impression,r,i,1\n")
                    rows += 2
    return rows


def env_for(src: Path | None) -> dict[str, str]:
    if src is None:
        return {}
    return {"PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}


def growth(table: list[tuple[str, int, str, float]]) -> list[str]:
    """Per command and side, the time per experiment at the largest count over the
    time per experiment at the smallest: about 1 when the time grows linearly with
    the number of experiments, about the ratio of the counts when quadratically."""
    out = []
    for what, side in dict.fromkeys((w, s) for w, _, s, _ in table):
        cells = sorted((n, t) for w, n, s, t in table if (w, s) == (what, side))
        if len(cells) < 2:
            continue
        (n0, t0), (n1, t1) = cells[0], cells[-1]
        out.append(
            f"- {what}, {side}: time per experiment at {n1:,} / at {n0:,} experiments = "
            f"{(t1 / n1) / (t0 / n0):.2f} (1 if linear, {n1 / n0:.0f} if quadratic)"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="1000,4000,10000")
    ap.add_argument("--agreement-counts", default="250,1000")
    ap.add_argument("--users", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="source tree of the abeval to compare with")
    ap.add_argument(
        "--baseline-max", type=int, default=None, help="skip the baseline above this count"
    )
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    counts = [int(c) for c in a.counts.split(",") if c]
    agreement = {int(c) for c in a.agreement_counts.split(",") if c}
    sides: dict[str, Path | None] = {"this": None}
    if a.baseline is not None:
        sides = {"baseline": a.baseline.resolve(), "this": None}
    table: list[tuple[str, int, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="abeval-bench-exp-") as tmp:
        for n in sorted(set(counts) | agreement):
            events = Path(tmp) / f"events_{n}.csv"
            rows = write_events(events, n, a.users)
            stores = {}
            here = {s: p for s, p in sides.items() if s == "this" or n <= (a.baseline_max or n)}
            for side, src in here.items():
                db = Path(tmp) / f"{side}_{n}.duckdb"
                load = abeval("ingest", str(events), "--db", str(db), "-q")
                ok(run_measured(load, TIMEOUT, cwd=Path(tmp), env=env_for(src)), f"{side} ingest")
                stores[side] = db
            commands = {"experiments": ["experiments"]} if n in counts else {}
            if n in agreement:
                commands["agreement"] = ["agreement", "--format", "json", "-o", "-"]
            for what, args in commands.items():
                times: dict[str, list[float]] = {s: [] for s in here}
                for _ in range(a.runs):
                    for side, src in here.items():
                        argv = abeval(*args, "--db", str(stores[side]))
                        # In the scratch folder: `python -m` puts the working folder first.
                        m = run_measured(argv, TIMEOUT, cwd=Path(tmp), env=env_for(src))
                        times[side].append(ok(m, f"{side} {what}").seconds)
                for side in here:
                    median = statistics.median(times[side])
                    table.append((what, n, side, median))
                    print(f"{what:12s} {n:>6,} experiments ({rows:,} rows)  {side:8s} "
                          f"{median:8.2f} s  {1000 * median / n:7.3f} ms/experiment",
                          flush=True)  # fmt: skip
    lines = [
        "| command | experiments | side | median s | ms / experiment |",
        "|---|---:|---|---:|---:|",
        *(f"| {w} | {n:,} | {s} | {t:.2f} | {1000 * t / n:.3f} |" for w, n, s, t in table),
        "",
        *growth(table),
    ]
    print("\n".join(lines))
    if a.record:
        info = machine()
        head = (
            f"\n## abeval experiments and agreement against the number of experiments "
            f"({info.get('date', '')})\n\n"
            f"{a.runs} runs per cell (median), {a.users} users per arm, two arms; "
            f"machine: {', '.join(f'{k} {v}' for k, v in info.items() if k != 'date')}.\n\n"
        )
        with (HERE / "RESULTS.md").open("a") as f:
            f.write(head + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
