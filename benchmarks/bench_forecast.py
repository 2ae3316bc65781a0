"""Coverage of the forecast model (abeval.stats.forecast) by simulation with known truth.

Each run simulates a history of k past experiments and one held-out candidate:

- online standard errors sᵢ ~ U(0.006, 0.014) (median 0.01), true offline lifts
  ξᵢ ~ N(0.005, 0.02²), offline lifts xᵢ = ξᵢ + N(0, σᵢ²) with σᵢ = 0 or sᵢ/2;
- true online lifts θᵢ = 0.002 + β ξᵢ + uᵢ, uᵢ ~ N(0, τ²) with τ = ratio · 0.01;
  online lifts yᵢ = θᵢ + N(0, sᵢ²);
- misspecified cells: uᵢ ~ τ · t₃ / √3 (same variance, heavy tails), or a
  non-linear link θ = 0.002 + β · 0.02 · tanh(ξ / 0.02) + u (saturating).

It fits the history with the same vectorised code :func:`abeval.stats.forecast.fit`
runs (:mod:`abeval.stats.forecast_batch`; the τ mixture, which ``fit`` uses from
8 experiments, the REML plug-in below) and records, per cell: how often the
95% prediction interval holds the candidate's true lift θ₀, the same for the
plug-in interval (REML τ̂, HKSJ-scaled parameter covariance, t(k − 2): the
baseline the mixture replaces), the 95% HKSJ slope interval's coverage of β,
and β̂'s bias (mean and median), all over the runs ``fit`` gives a slope;
``refused`` is the share it gives none (the offline lifts vary no more than
their noise: ``fit`` forecasts those from the intercept-only model)::

    nice -n 10 python benchmarks/bench_forecast.py --runs 2000 [--record]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy import special

from abeval.stats import forecast_batch as fb

RESULTS = Path(__file__).parent / "RESULTS.md"
KS = tuple(int(v) for v in os.environ.get("BENCH_KS", "3,4,6,8,12,20,40").split(","))
TAUS = (0.0, 0.5, 1.0, 2.0)
BETAS = (0.0, 0.5, 1.0)
SIGMAS = (0.0, 0.5)
INTERCEPT = 0.002
MEDIAN_SE = 0.01


@dataclass(frozen=True)
class Cell:
    k: int
    tau: float  # τ / median(s)
    beta: float
    sigma: float  # σ / s
    kind: str = "normal"  # normal | t3 | tanh


@dataclass(frozen=True)
class Outcome:
    refused: float
    coverage: float
    plugin: float
    width: float
    slope_coverage: float
    mean_beta: float
    median_beta: float


def simulate(cell: Cell, runs: int, rng: np.random.Generator) -> Outcome:
    k = cell.k
    shape = (runs, k + 1)
    s = rng.uniform(0.006, 0.014, shape)
    xi = rng.normal(0.005, 0.02, shape)
    sx = cell.sigma * s
    x = xi + rng.normal(size=shape) * sx
    tau = cell.tau * MEDIAN_SE
    u = rng.normal(size=shape) if cell.kind != "t3" else rng.standard_t(3, shape) / np.sqrt(3)
    link = 0.02 * np.tanh(xi / 0.02) if cell.kind == "tanh" else xi
    theta = INTERCEPT + cell.beta * link + tau * u
    y = theta + rng.normal(size=shape) * s
    cal = fb.calibrate(x[:, 1:], sx[:, 1:])
    grid, _ = fb.eiv_fit(cal, sx[:, 1:], y[:, 1:], s[:, 1:])
    xhat0, resid0 = fb.shrink(cal, x[:, 0], sx[:, 0])
    mix = fb.predictive(grid, fb.confidence_weights(grid, k - 2), xhat0, resid0)
    low, high = mix.quantile(0.025), mix.quantile(0.975)
    target = theta[:, 0]
    ok = ~cal.floored  # the runs fit() accepts (the others are "noise_only")
    best = fb.reml_index(grid)
    se, q = fb.hksj(grid, best, k)
    t = -special.stdtrit(k - 2, 0.025)
    beta_hat = fb.at(grid.beta, best)
    # the plug-in baseline: REML τ̂, HKSJ-scaled covariance, t(k − 2)
    h = xhat0
    par = q * (
        fb.at(grid.c00, best) + 2 * h * fb.at(grid.c01, best) + h * h * fb.at(grid.c11, best)
    )
    tau_hat = fb.at(grid.tau, best)
    var = par + tau_hat**2 + (beta_hat**2 + se**2) * resid0
    point = fb.at(grid.alpha, best) + beta_hat * h
    return Outcome(
        refused=float(np.mean(~ok)),
        coverage=float(np.mean(((low <= target) & (target <= high))[ok])),
        plugin=float(np.mean((np.abs(target - point) <= t * np.sqrt(var))[ok])),
        width=float(np.median((high - low)[ok])),
        slope_coverage=float(np.mean((np.abs(beta_hat - cell.beta) <= t * se)[ok])),
        mean_beta=float(np.mean(beta_hat[ok])),
        median_beta=float(np.median(beta_hat[ok])),
    )


def bias(value: float, beta: float) -> str:
    """Relative bias in percent, or the absolute bias when β = 0."""
    if beta == 0:
        return f"{value:+.3f} (abs)"
    return f"{100 * (value - beta) / beta:+.1f}%"


def grid_cells() -> list[Cell]:
    return [Cell(k, t, b, s) for k in KS for t in TAUS for b in BETAS for s in SIGMAS]


def misspecified_cells() -> list[Cell]:
    return [
        Cell(k, 1.0, 1.0, s, kind) for kind in ("t3", "tanh") for k in (8, 12, 40) for s in SIGMAS
    ]


def table(results: list[tuple[Cell, Outcome]]) -> list[str]:
    lines = [
        "| link, u | k | τ/s | β | σ/s | refused | PI coverage | plug-in PI | median PI width "
        "| slope coverage | β̂ bias (mean) | β̂ bias (median) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, o in results:
        lines.append(
            f"| {c.kind} | {c.k} | {c.tau:g} | {c.beta:g} | {c.sigma:g} | {o.refused:.3f} "
            f"| {o.coverage:.3f} "
            f"| {o.plugin:.3f} | {o.width:.4f} | {o.slope_coverage:.3f} "
            f"| {bias(o.mean_beta, c.beta)} | {bias(o.median_beta, c.beta)} |"
        )
    return lines


def summary(results: list[tuple[Cell, Outcome]]) -> list[str]:
    """Per k and τ: the range of coverages over β and σ."""
    lines = [
        "| k | τ/s | refused (max) | PI coverage (min–max over β, σ) | plug-in PI "
        "| slope coverage | β̂ mean bias, σ = s/2, β > 0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in KS:
        for t in TAUS:
            rows = [(c, o) for c, o in results if c.k == k and c.tau == t]
            cov = [o.coverage for _, o in rows]
            plug = [o.plugin for _, o in rows]
            slope = [o.slope_coverage for _, o in rows]
            biases = [
                100 * (o.mean_beta - c.beta) / c.beta for c, o in rows if c.beta > 0 and c.sigma
            ]
            refused = max(o.refused for _, o in rows)
            lines.append(
                f"| {k} | {t:g} | {refused:.3f} | {min(cov):.3f}–{max(cov):.3f} "
                f"| {min(plug):.3f}–{max(plug):.3f} | {min(slope):.3f}–{max(slope):.3f} "
                f"| {min(biases):+.1f}% to {max(biases):+.1f}% |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.time()
    load = os.getloadavg()[0]
    main_results = []
    for cell in grid_cells():
        main_results.append((cell, simulate(cell, args.runs, rng)))
        print(table([main_results[-1]])[-1], flush=True)
    other = [(cell, simulate(cell, args.runs, rng)) for cell in misspecified_cells()]
    elapsed = time.time() - start
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"## Forecast model coverage (issue 21), {stamp}",
        "",
        f"`nice -n 10 python benchmarks/bench_forecast.py --runs {args.runs}`: "
        f"{args.runs:,} runs per cell, seed {args.seed}, {elapsed / 60:.1f} min "
        f"(load average {load:.1f} on {os.cpu_count()} cores at the start).",
        "",
        "Summary: 95% prediction interval for a held-out experiment's true lift θ₀ "
        "(the model's mixture over τ, and the plug-in baseline), the 95% HKSJ slope "
        "interval, β̂'s mean relative bias with offline noise.",
        "",
        *summary(main_results),
        "",
        "Misspecified cells (τ = s, β = 1):",
        "",
        *table(other),
        "",
        "<details><summary>Every cell of the grid</summary>",
        "",
        *table(main_results),
        "",
        "</details>",
        "",
    ]
    print("\n".join(out))
    if args.record:
        with RESULTS.open("a") as f:
            f.write("\n" + "\n".join(out))


if __name__ == "__main__":
    main()
