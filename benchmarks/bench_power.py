"""Time ``abeval power --experiment`` before and after it asked the experiment's
session for its power rows alone (issue 22), in one run on one store.

Before, the command built the whole report (off-policy estimates, recorded
predictions, every metric) to read its power section; now it computes the
population, the moments and the power rows only. "Before" is the code of a git
ref (default ``main``), unpacked into a scratch folder and run with the same
interpreter through ``PYTHONPATH``; "after" is this checkout. The store is the
demo experiment (``abeval demo``'s: 30,000 users, seed 7), simulated and loaded
once; the two commands run interleaved, ``--runs`` times each, and must print
the same rows.

    python benchmarks/bench_power.py --runs 5 --record
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import REPO, describe, machine, run_measured  # noqa: E402

EXPERIMENT = "home-reco-v2"
TIMEOUT = 600.0


def _unpack(ref: str, into: Path) -> None:
    """The ``abeval`` package of git ``ref`` and the folders it reads at run time
    (migrations, report templates), written under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "abeval", "migrations", "reports"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def _build_store(folder: Path, users: int, seed: int) -> Path:
    import abeval
    from abeval.simulate.demo import demo_config, write_demo_experiment

    events = write_demo_experiment(demo_config(users, seed), folder)
    db = folder / "demo.duckdb"
    with abeval.open(db) as store:
        store.ingest(events)
        store.set(EXPERIMENT, control="control")
    events.unlink()
    return db


def _same_rows(a: str, b: str) -> bool:
    def close(x: object, y: object) -> bool:
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(close(u, v) for u, v in zip(x, y, strict=True))
        if isinstance(x, float) and isinstance(y, float):
            return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
        return x == y

    return close(json.loads(a), json.loads(b))


Sides = dict[str, dict[str, str]]


def interleaved(
    argv: list[str], sides: Sides, runs: int, folder: Path, timeout: float = TIMEOUT
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """Run ``argv`` once per side (its environment), ``runs`` times over: the wall
    times and peak RSS per side, and each side's last standard output."""
    times: dict[str, list[float]] = {side: [] for side in sides}
    rss: dict[str, list[float]] = {side: [] for side in sides}
    outputs: dict[str, str] = {}
    for _ in range(runs):
        for side, env in sides.items():
            m = run_measured(argv, timeout, cwd=folder, env=env)
            if m.code != 0:
                raise SystemExit(f"{side} {' '.join(argv[3:5])} failed ({m.code}): {m.err}")
            times[side].append(m.seconds)
            rss[side].append(m.rss_mib)
            outputs[side] = m.out
    return times, rss, outputs


def publish(text: str, record: bool) -> None:
    """Print ``text``; with ``record``, append it to RESULTS.md too."""
    print(text)
    if record:
        with (HERE / "RESULTS.md").open("a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--users", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--before", default="main", help="git ref of the code before")
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="abeval-bench-power-") as scratch:
        folder = Path(scratch)
        before_code = folder / "before"
        _unpack(args.before, before_code)
        db = _build_store(folder, args.users, args.seed)
        argv = [sys.executable, "-m", "abeval", "power", "--experiment", EXPERIMENT]
        argv += ["--db", str(db), "--json"]
        sides = {"before": {"PYTHONPATH": str(before_code)}, "after": {"PYTHONPATH": str(REPO)}}
        times, rss, outputs = interleaved(argv, sides, args.runs, folder)
        load.append(os.getloadavg()[0])
        if not _same_rows(outputs["before"], outputs["after"]):
            raise SystemExit("before and after printed different power rows")
    med = {side: statistics.median(t) for side, t in times.items()}
    lines = [
        f"### abeval power --experiment: the session's power rows alone (issue 22), "
        f"{args.users:,} users, {args.runs} runs each, interleaved",
        "",
        f"- machine: {describe(machine())}; load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end (1 min)",
        f"- before ({args.before}: the whole report): median {med['before']:.2f} s "
        f"(runs {', '.join(f'{t:.2f}' for t in times['before'])}), "
        f"peak RSS {max(rss['before']):.0f} MiB",
        f"- after (session: population, moments, power): median {med['after']:.2f} s "
        f"(runs {', '.join(f'{t:.2f}' for t in times['after'])}), "
        f"peak RSS {max(rss['after']):.0f} MiB",
        f"- after / before: {med['after'] / med['before']:.2f}; the rows printed are the same "
        "(floats to 1e-9)",
        "- command: `python benchmarks/bench_power.py "
        f"--runs {args.runs} --users {args.users} --record`",
    ]
    publish("\n".join(lines), args.record)


if __name__ == "__main__":
    main()
