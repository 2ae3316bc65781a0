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

``--explain`` asks why Welch's absolute test is conservative on revenue per user:
over a grid of buyers per arm and order-value tails it prints Welch's rejection
rate beside that of the same test with the true standard error of the difference
(estimated across the runs) and the correlation between |difference| and Welch's
standard error. Revenue per user is simulated vectorised, as in
:mod:`abeval.stats.calibration` but with the buying propensity scaled.
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


def revenue_runs(
    rng: np.random.Generator, runs: int, users: int, sigma: float, scale: float
) -> np.ndarray:
    """Per-user revenue, ``runs`` × ``users``: the population of
    :mod:`abeval.stats.calibration` with the buying propensity times ``scale``
    (1: about 50 buyers in 800 users)."""
    propensity = np.minimum(0.0625 * scale * rng.gamma(0.5, 2.0, (runs, users)), 1.0)
    buys = rng.random((runs, users)) < propensity
    orders = np.where(buys, 1 + rng.poisson(0.3, (runs, users)), 0)
    values = rng.lognormal(3.5, sigma, (runs, users, max(int(orders.max()), 1)))
    placed = np.arange(values.shape[2]) < orders[..., None]
    return np.asarray((values * placed).sum(axis=2))


def explain(runs: int, users: int, seed: int, alpha: float) -> str:
    """The ``--explain`` table (module doc)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    rate_se = math.sqrt(alpha * (1 - alpha) / runs)
    lines = [
        f"{runs:,} A/A runs per row, {users} users per arm, revenue per user, alpha = {alpha:g}, "
        f"seed {seed}; binomial standard error of a rate {rate_se:.2%}",
        "",
        "| buyers per arm | order values | Welch rejects | with the true SE | corr(abs diff, SE) |",
        "|---|---|---|---|---|",
    ]
    critical = float(stats.norm.ppf(1 - alpha / 2))
    for scale in (1.0, 2.0, 4.0):
        for sigma in (0.5, 1.0, 1.3):
            control = revenue_runs(rng, runs, users, sigma, scale)
            treatment = revenue_runs(rng, runs, users, sigma, scale)
            diff = treatment.mean(axis=1) - control.mean(axis=1)
            se = np.sqrt((treatment.var(axis=1, ddof=1) + control.var(axis=1, ddof=1)) / users)
            p = stats.ttest_ind(treatment, control, axis=1, equal_var=False).pvalue
            buyers = float(((control > 0).sum() + (treatment > 0).sum()) / (2 * runs))
            welch = np.mean(np.nan_to_num(p, nan=1.0) < alpha)
            lines.append(
                f"| {buyers:.0f} | e^N(3.5, {sigma:g}²) | {welch:.2%} "
                f"| {np.mean(np.abs(diff) > critical * diff.std()):.2%} "
                f"| {np.corrcoef(np.abs(diff), se)[0, 1]:.2f} |"
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
    parser.add_argument(
        "--explain", action="store_true", help="why Welch is conservative on revenue per user"
    )
    args = parser.parse_args()
    if args.explain:
        print(explain(args.runs, args.users, args.seed, args.alpha))
        return
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
