"""The bias of a capped revenue lift, by true lift (docs/metrics.md#outlier-capping).

Simulates two-arm experiments of per-user revenue with numpy (no store): each user
makes ``Poisson(r_u)`` purchases, ``r_u ~ Gamma(shape 1, mean 0.25)``, each of
value ``lognormal`` with mean 40 and log-scale σ (0.8, the demo's order values, or
1.5, a heavier tail); users without purchases count with 0. The treatment's true
lift ρ acts one of two ways: every order is worth 1 + ρ times as much (*value*),
or every user buys at 1 + ρ times the rate (*orders*). Both raise the mean revenue
per user by exactly ρ.

Each run caps every user's revenue at the 0.99 quantile of both arms pooled
(linear interpolation, as ``percentile_cont`` and abeval's ``--cap
revenue_per_user=0.99``), and reads the relative lift of the capped means. Per
cell: the runs, the mean capped lift with the standard error of that mean, the
share of the true lift it reads (mean capped / true), the mean of the share the
data predict (κ = 1 − cap·users above / Σ min(x, cap), what the report prints as
``lift_kept``), and the coverage of the true lift by the capped lift's 95%
interval (delta method) with its 95% Wilson interval.

    python benchmarks/bench_capping.py [--runs 400] [--users 20000] [--record]
"""

from __future__ import annotations

import argparse
import math
import platform
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from bench_decisions import wilson

RESULTS = Path(__file__).parent / "RESULTS.md"
LIFTS = (0.0, 0.02, 0.05, 0.10)
SIGMAS = (0.8, 1.5)
MECHANISMS = ("value", "orders")
ORDER_MEAN = 40.0
PURCHASE_RATE = 0.25
QUANTILE = 0.99
Z = 1.959964


def revenue(
    rng: np.random.Generator, users: int, sigma: float, value: float, rate: float
) -> np.ndarray:
    """Per-user revenue: Poisson purchases at a Gamma-distributed rate (× ``rate``),
    lognormal order values of mean ``ORDER_MEAN`` (× ``value``)."""
    r = rng.gamma(1.0, PURCHASE_RATE * rate, users)
    k = rng.poisson(r)
    mu = math.log(ORDER_MEAN * value) - sigma * sigma / 2
    orders = rng.lognormal(mu, sigma, int(k.sum()))
    owner = np.repeat(np.arange(users), k)
    return np.bincount(owner, weights=orders, minlength=users)


def relative(c: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """The relative lift of the means and its delta-method standard error."""
    mc, mt = c.mean(), t.mean()
    lift = mt / mc - 1
    se = math.sqrt(t.var(ddof=1) / t.size / mc**2 + mt**2 * c.var(ddof=1) / c.size / mc**4)
    return lift, se


def cell(
    sigma: float, mechanism: str, lift: float, runs: int, users: int, seed: int
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    capped, kept, covered, raw = [], [], 0, []
    for _ in range(runs):
        c = revenue(rng, users, sigma, 1.0, 1.0)
        value, rate = (1 + lift, 1.0) if mechanism == "value" else (1.0, 1 + lift)
        t = revenue(rng, users, sigma, value, rate)
        cap = float(np.quantile(np.concatenate([c, t]), QUANTILE))
        cc, tc = np.minimum(c, cap), np.minimum(t, cap)
        est, se = relative(cc, tc)
        capped.append(est)
        raw.append(relative(c, t)[0])
        above = int((c > cap).sum() + (t > cap).sum())
        kept.append(1 - cap * above / (cc.sum() + tc.sum()))
        covered += abs(est - lift) <= Z * se
    a = np.array(capped)
    lo, hi = wilson(covered, runs)
    return {
        "mean": float(a.mean()),
        "se": float(a.std(ddof=1) / math.sqrt(runs)),
        "raw": float(np.mean(raw)),
        "kept": float(np.mean(kept)),
        "read": float(a.mean() / lift) if lift else math.nan,
        "coverage": covered / runs,
        "lo": lo,
        "hi": hi,
    }


def table(runs: int, users: int, seed: int) -> list[str]:
    lines = [
        f"{runs} runs per cell, {users:,} users per arm, cap at the pooled {QUANTILE:g} "
        f"quantile, seed {seed}",
        "",
        "| order values | lift acts on | true lift | capped lift (± se) | uncapped | "
        "read / true | κ from the data | coverage of the true lift (Wilson 95%) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for i, sigma in enumerate(SIGMAS):
        for j, mechanism in enumerate(MECHANISMS):
            for k, lift in enumerate(LIFTS):
                r = cell(sigma, mechanism, lift, runs, users, seed + 100 * i + 10 * j + k)
                read = "" if math.isnan(r["read"]) else f"{r['read']:.2f}"
                lines.append(
                    f"| lognormal σ = {sigma:g} | {mechanism} | {lift:+.0%} | "
                    f"{r['mean']:+.2%} ± {r['se']:.2%} | {r['raw']:+.2%} | {read} | "
                    f"{r['kept']:.2f} | {r['coverage']:.1%} ({r['lo']:.1%}–{r['hi']:.1%}) |"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    lines = table(args.runs, args.users, args.seed)
    print("\n".join(lines))
    if args.record:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        head = [
            "",
            f"## Capping bias: the capped revenue lift by true lift ({stamp})",
            "",
            f"`benchmarks/bench_capping.py --runs {args.runs} --users {args.users}` on "
            f"{platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}.",
            "",
        ]
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write("\n".join([*head, *lines, ""]))


if __name__ == "__main__":
    main()
