"""A/A calibration of every report metric's test: false-positive rates at α.

Simulates A/A experiments of 800 users per arm (the population of
:mod:`abeval.stats.calibration`: CTR, conversion, revenue per user with
lognormal order values and about 50 buyers per arm, CUPED revenue, AOV),
computes each arm's sufficient statistics with numpy and calls
:func:`abeval.stats.compare` directly (no store). Prints a Markdown table of the
rejection rates of Fieller's relative interval (the default), the delta method's
and Welch's absolute test on the same runs, with the binomial standard error::

    python benchmarks/bench_calibration.py --runs 10000 [--record]

``--record`` appends the table to benchmarks/RESULTS.md with the date and machine.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import scipy

from abeval.stats.calibration import METRICS, aa_rates

RESULTS = Path(__file__).parent / "RESULTS.md"


def cpu_model() -> str:
    """The processor's name from /proc/cpuinfo (Linux), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def table(runs: int, users: int, seed: int, alpha: float, sigma: float) -> str:
    start = time.perf_counter()
    rates = aa_rates(runs, users, seed=seed, alpha=alpha, order_sigma=sigma)
    seconds = time.perf_counter() - start
    se = math.sqrt(alpha * (1 - alpha) / runs)
    lines = [
        f"{runs:,} A/A runs, {users} users per arm, order values e^N(3.5, {sigma:g}²), "
        f"alpha = {alpha:g}, seed {seed}; "
        f"binomial standard error of a rate {se:.2%}; {seconds:.1f} s",
        "",
        "| metric | Fieller (default) | delta method | absolute (Welch) | Fieller unbounded |",
        "|---|---|---|---|---|",
    ]
    for m in METRICS:
        lines.append(
            f"| {m} | {rates.fieller[m]:.2%} | {rates.delta[m]:.2%} | "
            f"{rates.absolute[m]:.2%} | {rates.unbounded[m]:.2%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--users", type=int, default=800, help="users per arm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--sigma", type=float, default=1.3, help="log-sd of an order's value")
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    text = table(args.runs, args.users, args.seed, args.alpha, args.sigma)
    print(text)
    if args.record:
        machine = (
            f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}"
        )
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write(
                f"\n## A/A calibration, {stamp}\n\nMachine: {machine}. Command: "
                f"`python benchmarks/bench_calibration.py --runs {args.runs} --seed {args.seed} "
                f"--sigma {args.sigma:g} --record`.\n\n{text}\n"
            )


if __name__ == "__main__":
    main()
