"""Coverage and false preference rate of the interleaving preference Δ_AB
(issue 33 item 6; docs/metrics.md#interleaving).

World: :func:`abeval.simulate.interleaved.interleaved_requests`, team-draft
interleaving of the two arms of a default :class:`SimulationConfig` (ranker A is
the control policy, ranker B the treatment policy whose relevance weight is
solved for the given CTR lift: the *preference strength*; 0 makes the rankers
identical), with position-based or cascade clicks. Per cell ``--runs``
comparisons with different seeds, each analysed by
:func:`abeval.stats.compare_interleaved` on the per-user counts.

The true Δ_AB is 0 for identical rankers (by symmetry); otherwise it is the
pooled ratio Σm/Σd over every run of every size of that strength and click model
(tens of millions of requests; one run weighs at most 1/runs of it). Reported:
coverage of the true Δ_AB by the 95% user-clustered interval and by the naive
per-request interval (:func:`abeval.stats.interleaving.request_interval`), with
Wilson 95% intervals, and the share of runs with p < 0.05 (the false preference
rate for identical rankers, the power otherwise)::

    python benchmarks/bench_interleaving.py --runs 500
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import numpy as np
from bench_ope_coverage import wilson

from abeval.simulate import simulate
from abeval.simulate.config import SimulationConfig
from abeval.simulate.interleaved import ClickModel, interleaved_requests
from abeval.stats import InterleavingStats, RatioStats, compare_interleaved, required_users
from abeval.stats.interleaving import interleaving_users, request_interval

STRENGTHS = (0.0, 0.02, 0.05)
USERS = (200, 2_000, 20_000)
CLICKS: tuple[ClickModel, ...] = ("position", "cascade")


@dataclasses.dataclass
class Cell:
    deltas: list[float] = dataclasses.field(default_factory=list)
    user_ci: list[tuple[float, float] | None] = dataclasses.field(default_factory=list)
    request_ci: list[tuple[float, float] | None] = dataclasses.field(default_factory=list)
    p_values: list[float | None] = dataclasses.field(default_factory=list)
    m_sum: float = 0.0
    d_sum: float = 0.0


def run(runs: int, users: tuple[int, ...], strengths: tuple[float, ...]) -> None:
    cells: dict[tuple[ClickModel, float, int], Cell] = {}
    started = time.perf_counter()
    for ci, clicks in enumerate(CLICKS):
        for si, strength in enumerate(strengths):
            for ni, n in enumerate(users):
                cell = cells.setdefault((clicks, strength, n), Cell())
                config = SimulationConfig(users=n, true_ctr_lift={"treatment": strength})
                for i in range(runs):
                    seed = ((ci * 100 + si) * 100 + ni) * 100_000 + i
                    sim = interleaved_requests(config, clicks=clicks, seed=seed)
                    stats = InterleavingStats.from_users(*sim.per_user())
                    result = compare_interleaved(stats)
                    cell.deltas.append(result.delta if result.delta is not None else np.nan)
                    cell.user_ci.append(result.interval)
                    cell.request_ci.append(request_interval(stats))
                    cell.p_values.append(result.p_value)
                    cell.m_sum += stats.per_user.m_sum
                    cell.d_sum += stats.per_user.d_sum
                print(f"done: {clicks} {strength} {n}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    print(f"{runs} runs per cell, {elapsed:.0f} s\n")
    print(
        "| clicks | strength (B's CTR lift) | users | true Δ_AB | mean Δ_AB | "
        "coverage, users as unit | coverage, requests as unit | share p < 0.05 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for clicks in CLICKS:
        for strength in strengths:
            group = [cells[(clicks, strength, n)] for n in users]
            truth = (
                0.0 if strength == 0 else sum(c.m_sum for c in group) / sum(c.d_sum for c in group)
            )
            for n, cell in zip(users, group, strict=True):
                print(
                    f"| {clicks} | {strength:+.0%} | {n:,} | {truth:+.5f} | "
                    f"{np.nanmean(cell.deltas):+.5f} | {_covered(cell.user_ci, truth)} | "
                    f"{_covered(cell.request_ci, truth)} | {_rejected(cell.p_values)} |"
                )


def _covered(intervals: list[tuple[float, float] | None], truth: float) -> str:
    shown = [ci for ci in intervals if ci is not None]
    hits = sum(low <= truth <= high for low, high in shown)
    return _share(hits, len(shown), len(intervals))


def _rejected(p_values: list[float | None]) -> str:
    shown = [p for p in p_values if p is not None]
    return _share(sum(p < 0.05 for p in shown), len(shown), len(p_values))


def _share(hits: int, n: int, total: int) -> str:
    if n == 0:
        return "–"
    low, high = wilson(hits, n)
    missing = f" ({total - n} undefined)" if n < total else ""
    return f"{hits / n:.1%} [{low:.1%}, {high:.1%}]{missing}"


def users_needed(strengths: tuple[float, ...], users: int) -> None:
    """Users for 80% power at α = 0.05 (two-sided): interleaving against an A/B
    test on CTR of the same two rankers, position-based clicks (the A/B
    simulator's click model).

    Interleaving: :func:`abeval.stats.interleaving.interleaving_users`, the
    ``(z₀.₉₇₅ + z₀.₈)² σ²/Δ²`` users with a decided request (σ² the per-user
    variance of Δ_AB's linearisation and Δ its value in one run of ``users``
    users) divided by the share of users with a decided request.
    A/B: :func:`abeval.stats.required_users` for the relative CTR lift, from
    the per-user CTR variance of the control arm of an A/B simulation (no
    pre-period) of ``users`` users.
    """
    print("| B's CTR lift | Δ_AB | users, interleaving | users, A/B on CTR | ratio |")
    print("|---|---|---|---|---|")
    for strength in strengths:
        if strength == 0:
            continue
        lift = {"treatment": strength}
        config = SimulationConfig(users=users, seed=11, true_ctr_lift=lift)
        stats = InterleavingStats.from_users(*interleaved_requests(config).per_user())
        delta = stats.per_user.mean
        needed = interleaving_users(delta, stats.per_user.variance, stats.users / users)
        interleaving = math.nan if needed is None else needed
        ab = _ab_users(
            SimulationConfig(
                users=users,
                seed=12,
                true_ctr_lift=lift,
                pre_period_days=0,
                with_propensities=False,
                with_event_ids=False,
            ),
            strength,
        )
        print(
            f"| {strength:+.0%} | {delta:+.5f} | {interleaving:,.0f} | {ab:,.0f} | "
            f"{ab / interleaving:.0f}× |"
        )


def _ab_users(config: SimulationConfig, lift: float) -> float:
    table = simulate(config).to_pandas()
    control = table[table["arm"] == config.arms[0]]
    counts = control.groupby("user_id")["event_type"].value_counts().unstack(fill_value=0)
    ctr = RatioStats.from_values(counts["click"], counts["impression"])
    return float(required_users(ctr.mean, ctr.variance, lift).total_users or math.nan)


def null_check(runs: int, users: tuple[int, ...], first_seed: int) -> None:
    """Identical rankers, position-based clicks, ``runs`` fresh seeds per size from
    ``first_seed``: the spread of Δ_AB across runs against the mean standard error,
    sd(Δ/se), the share of p < 0.05, and the same with the jackknife over users
    (leave one user out) in place of the delta method's standard error."""
    print(
        "| users | runs | first seed | sd(Δ) / mean se | sd(Δ/se) | p < 0.05 | jackknife p < 0.05 |"
    )
    print("|---:|---:|---:|---:|---:|---|---|")
    for n in users:
        config = SimulationConfig(users=n, true_ctr_lift={"treatment": 0.0})
        deltas, ses, jacks = [], [], []
        for i in range(runs):
            w, lo, t = interleaved_requests(config, seed=first_seed + i).per_user()
            result = compare_interleaved(InterleavingStats.from_users(w, lo, t))
            if result.delta is None or result.std_error is None:
                continue
            keep = (w + lo + t) > 0
            m, d = (w[keep] - lo[keep]) / 2, (w + lo + t)[keep].astype(float)
            left_out = (m.sum() - m) / (d.sum() - d)
            k = m.size
            jacks.append(math.sqrt((k - 1) / k * ((left_out - left_out.mean()) ** 2).sum()))
            deltas.append(result.delta)
            ses.append(result.std_error)
        delta, se, jack = np.array(deltas), np.array(ses), np.array(jacks)
        z = delta / se
        print(
            f"| {n:,} | {delta.size} | {first_seed:,} | {delta.std(ddof=1) / se.mean():.3f} | "
            f"{z.std(ddof=1):.3f} | {_share(int((np.abs(z) > 1.96).sum()), delta.size, runs)} | "
            f"{_share(int((np.abs(delta / jack) > 1.96).sum()), delta.size, runs)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--users", type=int, nargs="+", default=list(USERS))
    parser.add_argument("--strengths", type=float, nargs="+", default=list(STRENGTHS))
    parser.add_argument(
        "--power-users", type=int, default=0, help="only the users needed, from runs of N users"
    )
    parser.add_argument(
        "--null-check",
        type=int,
        default=None,
        metavar="FIRST_SEED",
        help="only identical rankers (position-based clicks) from this seed: sd(Δ/se), jackknife",
    )
    args = parser.parse_args()
    if args.null_check is not None:
        null_check(args.runs, tuple(args.users), args.null_check)
    elif args.power_users:
        users_needed(tuple(args.strengths), args.power_users)
    else:
        run(args.runs, tuple(args.users), tuple(args.strengths))


if __name__ == "__main__":
    main()
