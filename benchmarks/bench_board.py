"""The noise-aware agreement board checked by simulation with known truth
(issue 21, "Validation"; docs/metrics.md#noise-aware-board).

1. A perfect offline predictor (its offline lift is the true online lift θᵢ) over
   12 experiments, θᵢ ~ N(0.5%, sd²) with sd 1% and 2%, online lifts
   yᵢ = θᵢ + N(0, 0.8%²): Spearman ρ(θ, y), the noise ceiling of y
   (:func:`abeval.stats.agreement_noise.noise_ceiling`) and ρ / ceiling, whose
   mean should be about 1 when the ceiling is big enough to divide by.
2. The family-wise p-value (:func:`abeval.stats.agreement_familywise.familywise_p`)
   of 20 pure-noise signals (offline lifts unrelated to the online ones) over 12
   experiments: the share of runs where any signal has p < 0.05 should be about
   5%; beside it the same share for each signal's own permutation p-value of
   Spearman (no adjustment, the board's previous ranking statistic; a family of
   one signal in the same code). A second
   design puts two treatment arms sharing a control in each of 6 experiments
   (the arms' online lifts correlated 0.5 through the control).
3. For the perfect predictor, the raw precision (offline says better and the
   online interval lies above 0) against the expected precision
   Σ says·P(θ > 0 | y) / Σ says and the true precision (share of says with
   θ > 0, 1 for a perfect predictor).

``--record`` appends the tables to benchmarks/RESULTS.md with the date and machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from bench_calibration import cpu_model

from abeval.stats.agreement import EXACT_PERMUTATIONS, Point
from abeval.stats.agreement_familywise import familywise_p
from abeval.stats.agreement_noise import expected_precision, noise_ceiling, rho_over_ceiling

RESULTS = Path(__file__).parent / "RESULTS.md"
K = 12
ONLINE_SE = 0.008
MEAN_LIFT = 0.005
Z = 1.959963984540054


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def ceiling_table(runs: int, seed: int, draws: int) -> str:
    """Part 1 and part 3: the perfect predictor's ρ / ceiling and precisions."""
    rng = np.random.default_rng(seed)
    lines = [
        "| true-lift sd | runs | mean ρ | mean ceiling | ceiling ok | too small | "
        "no variance | ρ/ceiling mean | median | 10%–90% | 2.5%–97.5% |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    precision_lines = [
        "| true-lift sd | runs with a 'says' | raw precision | expected precision | "
        "true precision |",
        "|---|---|---|---|---|",
    ]
    se = np.full(K, ONLINE_SE)
    for sd in (0.01, 0.02):
        rhos, ceilings, ratios, statuses = [], [], [], []
        raw, expected = [], []
        for _ in range(runs):
            theta = rng.normal(MEAN_LIFT, sd, K)
            y = theta + rng.normal(0, ONLINE_SE, K)
            rho = _spearman(theta, y)
            c = noise_ceiling(y.tolist(), se.tolist(), draws=draws, seed=int(rng.integers(2**31)))
            rhos.append(rho)
            ceilings.append(c.ceiling)
            statuses.append(c.status)
            ratio = rho_over_ceiling(rho, c)
            if ratio is not None:
                ratios.append(ratio)
            says = theta > 0  # the perfect predictor says better exactly when it is
            if says.any():
                online_better = y - Z * ONLINE_SE > 0
                raw.append(float(np.sum(says & online_better) / np.sum(says)))
                e = expected_precision(y.tolist(), se.tolist(), says.tolist())
                expected.append(e.expected_precision)
        r = np.array(ratios)
        share = {s: statuses.count(s) / runs for s in set(statuses)}
        lines.append(
            f"| {sd:.0%} | {runs:,} | {np.mean(rhos):.3f} | {np.mean(ceilings):.3f} "
            f"| {share.get('ok', 0):.1%} | {share.get('ceiling_too_small', 0):.1%} "
            f"| {share.get('no_signal_variance', 0):.1%} | {r.mean():.3f} | {np.median(r):.3f} "
            f"| {np.quantile(r, 0.1):.2f}–{np.quantile(r, 0.9):.2f} "
            f"| {np.quantile(r, 0.025):.2f}–{np.quantile(r, 0.975):.2f} |"
        )
        precision_lines.append(
            f"| {sd:.0%} | {len(raw):,} | {np.mean(raw):.3f} | {np.mean(expected):.3f} | 1 |"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(precision_lines)


def _noise_signals(rng: np.random.Generator, arms: int, signals: int) -> list[list[Point]]:
    """``signals`` unrelated signals over K / arms experiments of ``arms`` arms;
    the arms of one experiment share a control (online errors correlated 1/2)."""
    experiments = K // arms
    shared = rng.normal(0, ONLINE_SE / np.sqrt(2), experiments)
    own = rng.normal(0, ONLINE_SE / np.sqrt(2), (experiments, arms))
    y = rng.normal(MEAN_LIFT, 0.01, (experiments, arms)) + shared[:, None] + own
    out = []
    for _ in range(signals):
        x = rng.normal(0, 0.02, (experiments, arms))
        out.append([Point(f"e{e}", float(x[e, a]), float(y[e, a]), arm=f"t{a}")
                    for e in range(experiments) for a in range(arms)])  # fmt: skip
    return out


def familywise_table(runs: int, seed: int, permutations: int, signals: int) -> str:
    """Part 2: family-wise false-positive rate of pure-noise signals."""
    rng = np.random.default_rng(seed)
    lines = [
        "| design | runs | permutations per run | family-wise p < 0.05 | (95% MC interval) "
        "| any unadjusted Spearman p < 0.05 | one signal's family-wise p < 0.05 |",
        "|---|---|---|---|---|---|---|",
    ]
    for arms in (1, 2):
        any_fw = any_raw = first_fw = 0
        for _ in range(runs):
            sigs = _noise_signals(rng, arms, signals)
            fw = familywise_p(sigs, permutations, int(rng.integers(2**31)))
            ps = [p for p in fw.p_values if p is not None]
            any_fw += min(ps) < 0.05
            first_fw += (fw.p_values[0] or 1.0) < 0.05
            if arms == 1:
                # A family of one signal: its own permutation p-value, unadjusted.
                raw = [familywise_p([s], permutations, int(rng.integers(2**31))).p_values[0]
                       for s in sigs]  # fmt: skip
                any_raw += min(p for p in raw if p is not None) < 0.05
        rate = any_fw / runs
        half = 1.96 * np.sqrt(rate * (1 - rate) / runs)
        design = f"{K} experiments × 1 arm" if arms == 1 else f"{K // 2} experiments × 2 arms"
        raw_text = f"{any_raw / runs:.1%}" if arms == 1 else "—"
        lines.append(
            f"| {design}, {signals} signals | {runs:,} | {permutations:,} | {rate:.1%} "
            f"| {rate - half:.1%}–{rate + half:.1%} | {raw_text} | {first_fw / runs:.2%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="runs of the ceiling study")
    parser.add_argument("--fw-runs", type=int, default=1000, help="runs of the family-wise study")
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--draws", type=int, default=2000, help="draws of each noise ceiling")
    parser.add_argument("--signals", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--part", choices=("all", "ceiling", "familywise"), default="all", help="what to run"
    )
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    ceiling = fw = ""
    if args.part in ("all", "ceiling"):
        ceiling = ceiling_table(args.runs, args.seed, args.draws)
        print(ceiling, flush=True)
    if args.part in ("all", "familywise"):
        fw = familywise_table(args.fw_runs, args.seed + 1, args.permutations, args.signals)
        print(fw)
    elapsed = time.perf_counter() - started
    print(f"{elapsed:.0f} s")
    if args.record:
        load = os.getloadavg()
        machine = (
            f"{cpu_model()}, {os.cpu_count()} cores (load average {load[0]:.1f} while it ran: "
            f"shared with other sessions), Python {platform.python_version()}, "
            f"numpy {np.__version__}"
        )
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write(
                f"\n## The noise-aware agreement board (issue 21, items 4 and validation), "
                f"{stamp}\n\nMachine: {machine}. Command: `nice -n 10 python "
                f"benchmarks/bench_board.py --part {args.part} --runs {args.runs} --fw-runs "
                f"{args.fw_runs} --permutations {args.permutations} --draws {args.draws} --seed "
                f"{args.seed} --record` ({elapsed:.0f} s). Exact permutations up to "
                f"{EXACT_PERMUTATIONS:,} per signal; the family-wise test enumerates up to "
                f"10,000.\n\n{ceiling}\n\n{fw}\n"
            )


if __name__ == "__main__":
    main()
