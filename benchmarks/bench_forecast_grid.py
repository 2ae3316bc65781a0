"""The forecast (abeval.stats.forecast) against an errors-in-variables REML
reference, with offline noise, at small k, with an outlier, and the ranking of
signals (issue 36, item 5), before and after a change in one run.

Each run simulates k past experiments and one held-out candidate:

- online standard errors sᵢ ~ U(0.006, 0.014) (median s = 0.01), true offline
  lifts ξᵢ ~ N(0.005, 0.01²), offline lifts xᵢ = ξᵢ + N(0, σᵢ²) with
  σᵢ = ``noise`` · sᵢ (0, 1 or 2: none, comparable, twice the online noise);
- true online lifts θᵢ = 0.002 + β ξᵢ + uᵢ, uᵢ ~ N(0, τ²), τ = s/2, β 0 (no
  signal), 0.3 (weak) or 1 (strong); online lifts yᵢ = θᵢ + N(0, sᵢ²);
- ``outlier`` cells: experiment 1's online lift moved by +6 sᵢ.

Per cell it calls :func:`abeval.stats.forecast.fit` and ``predict`` (the code
being measured, imported from ``--before DIR`` in a child process for the
before column) and records how often the forecast is refused, the 95%
interval's coverage of θ₀, its median width over the reference's, and, in the
outlier cells, how often :func:`abeval.stats.forecast_influence.influence` names the
outlier (elsewhere: how often it names any experiment). The reference is
written here, independently: regression calibration with the floor, REML τ̂²
on a fine grid with each experiment's variance sᵢ² + τ² + β̃² λᵢ σᵢ² (β̃ from a
first pass without that term), the Knapp–Hartung scaled covariance, and
θ̂₀ ± t(k − 2) √(q hᵀCh + τ̂² + (β̂² + q C₁₁) λ₀σ₀²).

Ranking: boards of one signal against "no signal" (the intercept-only model)
at k = 8, 12 and 20 with σ = s: a useless signal (θ unrelated to x) is a false
ranking when it is put above no signal; a weak real one (β = 0.3) when at or
below it. Criteria: the board's ``loo_score(rows).gain > 0``, and the slope's
HKSJ t above the one-sided 10% and 20% points of t(k − 2)::

    nice -n 10 python benchmarks/bench_forecast_grid.py --runs 300 \\
        [--before DIR] [--record]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

KS = (4, 6, 8, 12, 20)
NOISES = (0.0, 1.0, 2.0)
SLOPES = (0.0, 0.3, 1.0)
RANK_KS = (8, 12, 20)
TAU = 0.5
MEDIAN_SE = 0.01
INTERCEPT = 0.002
OUTLIER = 6.0


@dataclass(frozen=True)
class Cell:
    k: int
    noise: float  # σ / s
    beta: float
    outlier: bool = False
    influence: bool = False  # measure the influence diagnostic in this cell

    @property
    def key(self) -> str:
        return f"{self.k}/{self.noise:g}/{self.beta:g}/{int(self.outlier)}"


def cells() -> list[Cell]:
    grid = [Cell(k, n, b) for k in KS for n in NOISES for b in SLOPES]
    flagged = [Cell(k, n, 1.0, False, True) for k in (8, 12) for n in (0.0, 1.0)]
    outliers = [Cell(k, n, 1.0, True, True) for k in (6, 8, 12, 20) for n in (0.0, 1.0)]
    return grid + flagged + outliers


def draw(cell: Cell, runs: int, seed: int, index: int) -> dict[str, np.ndarray]:
    """The cell's histories (row 0 of each run is the candidate)."""
    rng = np.random.default_rng([seed, index])
    shape = (runs, cell.k + 1)
    s = rng.uniform(0.006, 0.014, shape)
    xi = rng.normal(0.005, 0.01, shape)
    sx = cell.noise * s
    x = xi + rng.normal(size=shape) * sx
    theta = INTERCEPT + cell.beta * xi + TAU * MEDIAN_SE * rng.normal(size=shape)
    y = theta + rng.normal(size=shape) * s
    if cell.outlier:
        y[:, 1] += OUTLIER * s[:, 1]
    return {"s": s, "x": x, "sx": sx, "y": y, "theta": theta}


def reference(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The reference 95% interval (low, high) of every run (module docstring)."""
    x, sx, y, s = d["x"][:, 1:], d["sx"][:, 1:], d["y"][:, 1:], d["s"][:, 1:]
    k = x.shape[1]
    var_x = x.var(axis=1, ddof=1)
    big_s2 = np.maximum(var_x - (sx**2).mean(axis=1), 0.05 * var_x)[:, None]
    lam = big_s2 / (big_s2 + sx**2)
    mean_x = x.mean(axis=1, keepdims=True)
    xh = mean_x + lam * (x - mean_x)
    scale = np.maximum(y.std(axis=1, ddof=1), np.median(s, axis=1))
    taus = scale[:, None] * np.concatenate([[0.0], np.geomspace(1e-3, 20.0, 400)])[None, :]

    def solve(extra: np.ndarray) -> dict[str, np.ndarray]:
        v = s[:, None, :] ** 2 + taus[:, :, None] ** 2 + extra[:, None, :]
        w = 1 / v
        m = np.stack([np.ones_like(xh), xh], axis=2)  # (R, k, 2)
        info = np.einsum("rgk,rki,rkj->rgij", w, m, m)
        cov = np.linalg.inv(info)
        coef = np.einsum("rgij,rgk,rkj,rk->rgi", cov, w, m, y)
        fitted = np.einsum("rgi,rki->rgk", coef, m)
        q = (w * (y[:, None, :] - fitted) ** 2).sum(axis=2)
        ll = -0.5 * (np.log(v).sum(axis=2) + np.log(np.linalg.det(info)) + q)
        best = ll.argmax(axis=1)
        pick = np.arange(len(best))
        return {
            "coef": coef[pick, best],
            "cov": cov[pick, best],
            "q": q[pick, best],
            "tau": taus[pick, best],
        }

    first = solve(np.zeros_like(xh))
    beta1 = first["coef"][:, 1:2]
    r = solve(beta1**2 * lam * sx**2)
    lam0 = big_s2[:, 0] / (big_s2[:, 0] + d["sx"][:, 0] ** 2)
    x0 = mean_x[:, 0] + lam0 * (d["x"][:, 0] - mean_x[:, 0])
    h = np.stack([np.ones_like(x0), x0], axis=1)
    qk = r["q"] / (k - 2)
    par = qk * np.einsum("ri,rij,rj->r", h, r["cov"], h)
    beta = r["coef"][:, 1]
    var = par + r["tau"] ** 2 + (beta**2 + qk * r["cov"][:, 1, 1]) * lam0 * d["sx"][:, 0] ** 2
    point = r["coef"][:, 0] + beta * x0
    half = stats.t.ppf(0.975, k - 2) * np.sqrt(var)
    return point - half, point + half


def rows_of(d: dict[str, np.ndarray], run: int) -> list[object]:
    from abeval.stats.forecast import HistoryRow

    return [
        HistoryRow(
            float(d["x"][run, i]),
            float(d["sx"][run, i]),
            float(d["y"][run, i]),
            float(d["s"][run, i]),
            f"e{i}",
        )
        for i in range(1, d["x"].shape[1])
    ]


def measure_cell(cell: Cell, runs: int, seed: int, index: int) -> dict[str, float]:
    from abeval.stats import forecast as fc

    d = draw(cell, runs, seed, index)
    ref_low, ref_high = reference(d)
    try:  # the diagnostic's own module; older code (--before) had it in forecast or not at all
        from abeval.stats.forecast_influence import influence as found_influence

        influence: Callable[..., object] | None = found_influence
    except ImportError:
        influence = getattr(fc, "influence", None)
    refused = covered = ref_covered = flagged = named = 0
    ratios: list[float] = []
    for run in range(runs):
        rows = rows_of(d, run)
        fitted = fc.fit(rows)
        f = fc.predict(fitted, float(d["x"][run, 0]), float(d["sx"][run, 0]))
        theta0 = float(d["theta"][run, 0])
        ref_covered += bool(ref_low[run] <= theta0 <= ref_high[run])
        if f.status != "ok" or f.interval is None:
            refused += 1
            continue
        covered += f.interval[0] <= theta0 <= f.interval[1]
        ratios.append((f.interval[1] - f.interval[0]) / (ref_high[run] - ref_low[run]))
        if cell.influence and influence is not None:
            found = influence(rows, f)
            fired = bool(getattr(found, "flagged", False))
            flagged += fired
            named += fired and getattr(found, "experiment", None) == "e1"
    given = max(runs - refused, 1)
    return {
        "refused": refused / runs,
        "coverage": covered / given,
        "reference": ref_covered / runs,
        "width": float(np.median(ratios)) if ratios else math.nan,
        "flagged": flagged / given if influence is not None else math.nan,
        "named": named / given if influence is not None else math.nan,
    }


def measure_ranking(k: int, runs: int, seed: int) -> dict[str, float]:
    from abeval.stats import agreement_predictive as ap
    from abeval.stats import forecast as fc

    out: dict[str, float] = {}
    for kind, beta in (("useless", 0.0), ("weak", 0.3)):
        cell = Cell(k, 1.0, beta)
        d = draw(cell, runs, seed, 1000 + k + int(10 * beta))
        if kind == "useless":  # the offline lifts of a signal unrelated to θ
            rng = np.random.default_rng([seed, 2000 + k])
            d["theta"] = INTERCEPT + TAU * MEDIAN_SE * rng.normal(size=d["x"].shape)
            d["y"] = d["theta"] + rng.normal(size=d["x"].shape) * d["s"]
        above = {"gain": 0, "t10": 0, "t20": 0}
        for run in range(runs):
            rows = rows_of(d, run)
            gain = ap.loo_score(rows).gain
            above["gain"] += gain is not None and gain > 0
            f = fc.fit(rows)
            if f.slope is not None and f.slope_se:
                t = f.slope / f.slope_se
                above["t10"] += bool(t > stats.t.ppf(0.9, k - 2))
                above["t20"] += bool(t > stats.t.ppf(0.8, k - 2))
        for name, count in above.items():
            share = count / runs
            out[f"{kind}_{name}"] = share if kind == "useless" else 1 - share
    return out


def measure(runs: int, seed: int) -> dict[str, dict[str, float]]:
    result = {c.key: measure_cell(c, runs, seed, i) for i, c in enumerate(cells())}
    for k in RANK_KS:
        result[f"rank/{k}"] = measure_ranking(k, runs, seed)
    return result


def child(code: Path | None, runs: int, seed: int) -> subprocess.Popen[str]:
    """The measurement in a child process, with ``code`` first on the path."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    argv = [sys.executable, __file__, "--json", "--runs", str(runs), "--seed", str(seed)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)


def result(process: subprocess.Popen[str]) -> dict[str, dict[str, float]]:
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"a measuring child failed (exit {process.returncode})")
    return dict(json.loads(out))


def pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{100 * value:.1f}"


def wilson(p: float, n: int) -> str:
    if math.isnan(p):
        return ""
    z = 1.96
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f" ({100 * (mid - half):.0f}–{100 * (mid + half):.0f})"


def table(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| k | σ/s | β | outlier | refused before → after | coverage before → after "
        "| reference coverage | width / reference before → after | influence names "
        "outlier (any) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells():
        b, a = before[c.key], after[c.key]
        infl = f"{pct(a['named'])} ({pct(a['flagged'])})" if c.influence else ""
        lines.append(
            f"| {c.k} | {c.noise:g} | {c.beta:g} | {'yes' if c.outlier else ''} "
            f"| {pct(b['refused'])} → {pct(a['refused'])} "
            f"| {pct(b['coverage'])} → {pct(a['coverage'])} | {pct(a['reference'])} "
            f"| {b['width']:.2f} → {a['width']:.2f} | {infl} |"
        )
    return lines


def ranking(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], runs: int
) -> list[str]:
    def cell(values: dict[str, float], key: str) -> str:
        return f"{pct(values.get(key, math.nan))}{wilson(values.get(key, math.nan), runs)}"

    lines = [
        "| k | criterion | useless above no signal, before → after "
        "| weak at or below no signal, before → after |",
        "|---|---|---|---|",
    ]
    names = {
        "gain": "leave-one-out gain > 0",
        "t10": "slope HKSJ t, one-sided 10%",
        "t20": "slope HKSJ t, one-sided 20%",
    }
    for k in RANK_KS:
        b, a = before[f"rank/{k}"], after[f"rank/{k}"]
        for key, name in names.items():
            lines.append(
                f"| {k} | {name} | {cell(b, f'useless_{key}')} → {cell(a, f'useless_{key}')} "
                f"| {cell(b, f'weak_{key}')} → {cell(a, f'weak_{key}')} |"
            )
    return lines


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from measure import code_copy, publish

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--before", type=code_copy, default=None)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.runs, args.seed)))
        return
    start = time.time()
    load = os.getloadavg()[0]
    running = child(None, args.runs, args.seed)
    earlier = child(args.before, args.runs, args.seed) if args.before else None
    after = result(running)
    before = result(earlier) if earlier is not None else after
    minutes = (time.time() - start) / 60
    publish(
        [
            "## Forecast grid: offline noise, small k, outliers, ranking (issue 36)",
            "",
            f"`nice -n 10 python benchmarks/bench_forecast_grid.py --runs {args.runs} "
            f"--before DIR`: {args.runs} runs per cell, seed {args.seed}, τ = s/2, "
            f"{minutes:.1f} min (load average {load:.1f} at the start). Percentages; "
            "width is the median over runs of the forecast's 95% interval width "
            "over the EIV/REML t(k − 2) reference's.",
            "",
            *table(before, after),
            "",
            "Ranking one signal against no signal (σ = s, τ = s/2; Wilson 95% intervals):",
            "",
            *ranking(before, after, args.runs),
        ],
        args.record,
    )


if __name__ == "__main__":
    main()
