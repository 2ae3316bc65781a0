"""Why ``make demo``'s users-needed ratio of interleaving against an A/B test is
far below bench_interleaving's (issue 33): the same power formulas, per history
candidate of the demo (abeval.simulate.series, 12 candidates against production).

Per candidate, the users for 80% power at α = 0.05, by the formulas the demo
uses (:func:`abeval.stats.interleaving.interleaving_users` and
:func:`abeval.stats.required_users` for the relative CTR lift), on two sets of
inputs:

- *true*: Δ_AB and its per-user variance from one interleaved run of ``--users``
  users of the candidate's rankers (the demo's :func:`interleaved_config`, its
  seed), the per-user CTR variance of the control arm of an A/B run of as many
  users, and the candidate's *true* CTR lift: what the benchmark does;
- *demo*: what ``make demo`` prints, read from the demo store (``--db``): each
  800-user run's observed Δ_AB and variances, and the CTR lift its A/B test
  *observed* (``abeval power --experiment RUN --mde |lift|``).

Also each candidate's Δ_AB per unit of CTR lift (the benchmark's rankers differ in
relevance only, Δ_AB ≈ −lift; the series' also in popularity tilt)::

    python benchmarks/bench_interleaving_demo.py --db demo/demo.duckdb
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time

from bench_interleaving import _ab_users

import abeval
from abeval.simulate.config import SimulationConfig
from abeval.simulate.demo import demo_series_config
from abeval.simulate.interleaved import interleaved_requests
from abeval.simulate.series import interleaved_config, series
from abeval.stats import InterleavingStats
from abeval.stats.interleaving import interleaving_users


def _observed(db: str) -> dict[str, tuple[float, float | None, int, int, float]]:
    """A/B test → (its observed CTR lift, its standard error, interleaving's and the
    A/B test's users by the demo's plan, the run's observed Δ_AB)."""
    out = {}
    with abeval.open(db, read_only=True) as store:
        board = store.agreement()
        for p in board.pairs:
            if p.source != "interleaving" or p.online_metric != "ctr" or not p.online_lift:
                continue
            run = f"{p.experiment}-interleaved"
            plan = store.plan(run, mde=abs(p.online_lift)).interleaving
            if plan is None or not plan.users_needed or not plan.ab_users or plan.delta is None:
                continue
            shown = p.offline_lift if p.offline_lift is not None else math.nan
            out[p.experiment] = (p.online_lift, p.online_se, plan.users_needed, plan.ab_users,
                                 shown)  # fmt: skip
    return out


def _one(config: SimulationConfig, lift: float) -> tuple[float, float, float, float, float]:
    """(Δ_AB for the treatment, per-user variance of its linearisation, share of users
    with a decided request, interleaving's users, the A/B test's users) for ``config``
    whose treatment has the true CTR lift ``lift``."""
    stats = InterleavingStats.from_users(*interleaved_requests(config).per_user())
    delta = -stats.per_user.mean  # the simulator's team 0 is the control
    share = stats.users / config.users
    inter = interleaving_users(delta, stats.per_user.variance, share) or math.nan
    ab_config = dataclasses.replace(
        config, pre_period_days=0, with_propensities=False, with_event_ids=False
    )
    return delta, stats.per_user.variance, share, inter, _ab_users(ab_config, abs(lift))


def decompose(users: int, lift: float) -> None:
    """From the benchmark's world to the demo's, one setting at a time, for a
    treatment of true CTR lift ``lift``: Δ_AB per unit of lift, the users each
    design needs and their ratio."""
    base = demo_series_config(7).base
    steps = [
        ("benchmark (SimulationConfig defaults)", SimulationConfig()),
        ("+ 5 requests per user", SimulationConfig(requests_per_user=5.0)),
        ("+ user propensity concentration 10", SimulationConfig(requests_per_user=5.0,
                                                               user_propensity_concentration=10.0)),
        ("+ 20 candidates, catalogue 1,000 (the series' base)", base),
        ("+ popularity tilt 0.4 both (the series' control)",
         dataclasses.replace(base, popularity_tilt={"control": 0.4, "treatment": 0.4})),
        ("+ treatment tilt 0.8", dataclasses.replace(
            base, popularity_tilt={"control": 0.4, "treatment": 0.8})),
    ]  # fmt: skip
    print(f"\n| world (true CTR lift {lift:+.0%}) | Δ_AB | Δ_AB / lift | σ² | decided share | "
          "users, interleaving | users, A/B | ratio |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, config in steps:
        config = dataclasses.replace(
            config, users=users, seed=11, true_ctr_lift={"treatment": lift},
            true_conversion_lift={"treatment": 0.0}, arms=("control", "treatment"),
        )  # fmt: skip
        delta, variance, share, inter, ab = _one(config, lift)
        print(f"| {label} | {delta:+.4f} | {delta / lift:.2f} | {variance:.4f} | {share:.2f} | "
              f"{inter:,.0f} | {ab:,.0f} | {ab / inter:.1f}× |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="demo/demo.duckdb")
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7, help="the demo's seed (abeval demo --seed)")
    parser.add_argument("--decompose", type=float, metavar="LIFT", help="only the decomposition")
    args = parser.parse_args()
    if args.decompose is not None:
        decompose(args.users, args.decompose)
        return
    started = time.monotonic()
    seen = _observed(args.db)
    print(
        "| candidate | true CTR lift | A/B lift seen (se) | true Δ_AB | Δ_AB seen (800) | "
        "Δ_AB / lift | users, interleaving (true / demo) | users, A/B (true / demo) | "
        "ratio (true / demo) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios: list[tuple[float, float]] = []
    per_lift: list[float] = []
    for e in series(demo_series_config(args.seed)):
        delta, _, _, inter, ab = _one(interleaved_config(e, args.users), e.ctr_lift)
        true_ratio = ab / inter if inter else math.nan
        per_lift.append(delta / e.ctr_lift)
        if e.name not in seen:
            print(f"| {e.name} | {e.ctr_lift:+.2%} | (no ratio in the demo) | {delta:+.4f} |")
            continue
        lift, se, inter_demo, ab_demo, delta_demo = seen[e.name]
        demo_ratio = ab_demo / inter_demo
        ratios.append((true_ratio, demo_ratio))
        shown_se = f"{se:.2%}" if se is not None else "n/a"
        print(
            f"| {e.name} | {e.ctr_lift:+.2%} | {lift:+.2%} ({shown_se}) | {delta:+.4f} | "
            f"{delta_demo:+.4f} | {delta / e.ctr_lift:.2f} | {inter or math.nan:,.0f} / "
            f"{inter_demo:,} | {ab:,.0f} / {ab_demo:,} | {true_ratio:.0f}× / {demo_ratio:.0f}× |"
        )
    if ratios:
        print(
            f"\nmedian ratio: true inputs {statistics.median(r for r, _ in ratios):.1f}×, "
            f"the demo's {statistics.median(d for _, d in ratios):.1f}× "
            f"({len(ratios)} candidates); median Δ_AB / CTR lift "
            f"{statistics.median(per_lift):.2f}; {time.monotonic() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
