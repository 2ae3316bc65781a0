"""Coverage of the off-policy intervals shown without a warning, near and far
targets, before and after the skewness rule (issue 36 item 4;
docs/metrics.md#ope-intervals).

World: :func:`abeval.simulate.ranked.example_world` with 12 items (a catalogue
large enough for a divergent target to put weight on lists the logging policy
rarely shows), three user types, three positions, 1-4 requests per user. The
*near* target is the world's own; the *far* one ranks by the cube of its scores
(Plackett–Luce at a third of the temperature). The item-position estimators
(``ips``, ``snips``, ``capped_ips``, ``ncis``) are judged under position-based
clicks, the step estimators (``rips``, ``snrips``, ``sips``, ``cascade_dr``)
under cascade clicks: each where it is unbiased. Per cell ``--runs`` experiments
(the same seeds for before and after), each estimated through the statistics
layer on the per-user sums of :mod:`benchmarks.bench_ope` (whose store check
shows that they are the SQL's), with Σ_u w_u³ added for the skewness.

*Before*: an interval is shown without a warning when its weights are worth at
least ``MIN_ESS_USERS`` users (the rule until now); *after*: when
:func:`abeval.stats.ope.user_weights` marks it ``normal`` (that, and the
skewness of the mean of the per-user weights at most ``MAX_MEAN_SKEW``).
Coverage of the true CTR by the 95% normal interval over the runs where the
interval is shown without a warning, with Wilson 95% intervals::

    python benchmarks/bench_ope_coverage.py --runs 300 [--record]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import subprocess
import time
from datetime import UTC, datetime

import numpy as np
from bench_ope import ALPHA, Sums, all_estimates, publish, sums_of, user_table

from abeval.simulate.ranked import ClickModel, example_world, impressions
from abeval.stats.distributions import norm_isf
from abeval.stats.ope import (
    MAX_MEAN_SKEW,
    MIN_ESS_USERS,
    cube,
    shown_interval,
    skew_corrected,
    user_weights,
)
from abeval.stats.ope_ranking import INFLUENCE_VARIABLES
from abeval.stats.skew_interval import triple, triples

ITEMS = 12
TARGETS = {"near": 1.0, "far": 3.0}
FAMILIES: dict[ClickModel, tuple[str, ...]] = {
    "position_based": ("ips", "snips", "capped_ips", "ncis"),
    "cascade": ("rips", "snrips", "sips", "cascade_dr"),
}
#: The per-user weight sums whose cubes the store adds (ope_source.direction).
WEIGHT_VARIABLES = ("w", "k", "r", "s")


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion."""
    if n == 0:
        return (math.nan, math.nan)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def with_cubes(s: Sums, table: np.ndarray, names: list[str]) -> Sums:
    """``s`` with Σ w_u³ of each weight and, over every column, Σ x_u·y_u·z_u
    (the store adds those of :data:`INFLUENCE_VARIABLES` only; here ``snrips``
    has them too, to measure its corrected interval)."""
    sums = dict(s.sums)
    for w in WEIGHT_VARIABLES:
        sums[cube(w)] = float((table[:, names.index(w)] ** 3).sum())
    t = np.einsum("ui,uj,uk->ijk", table, table, table, optimize=True)
    for x, y, z in triples(names):
        sums[triple(x, y, z)] = float(t[names.index(x), names.index(y), names.index(z)])
    return Sums(s.users, sums, s.products)


@dataclasses.dataclass
class Tally:
    runs: int = 0
    hits: int = 0
    low: int = 0  # the normal interval entirely below the truth
    high: int = 0  # ... entirely above it
    hall: int = 0
    hall_low: int = 0
    hall_high: int = 0
    skewed: int = 0  # the skewness warning fires
    skewed_hits: int = 0
    skewed_hall: int = 0
    skewed_few: int = 0  # ... and fewer than MIN_ESS_USERS effective users
    shown_before: int = 0  # the normal interval without a warning (the rule until now)
    hits_before: int = 0
    shown_after: int = 0  # any interval without a warning (the rule of this change)
    hits_after: int = 0


def cell(model: ClickModel, target: str, users: int, runs: int, seed: int) -> dict[str, Tally]:
    base = example_world(model, items=ITEMS)
    world = dataclasses.replace(base, target_scores=base.target_scores ** TARGETS[target])
    truth = world.true_ctr()
    rng = np.random.default_rng(seed)
    out = {name: Tally() for name in FAMILIES[model]}
    z = norm_isf(ALPHA / 2)
    for _ in range(runs):
        table = user_table(world, impressions(world, rng, "control", users))
        s = with_cubes(sums_of(table), table.to_numpy(), list(table.columns))
        found = all_estimates(s, world.positions)
        for name, t in out.items():
            ctr = found[name].ctr  # Hall's interval where the estimate shows it
            hall = skew_corrected(ctr, s.users, ALPHA)
            u = user_weights(s, name, {})
            assert ctr.value is not None and ctr.se is not None and u is not None
            assert hall is not None and hall.ci is not None
            ci = (ctr.value - z * ctr.se, ctr.value + z * ctr.se)
            hit = ci[0] <= truth <= ci[1]
            hall_hit = hall.ci[0] <= truth <= hall.ci[1]
            t.runs += 1
            t.hits += hit
            t.low += ci[1] < truth
            t.high += ci[0] > truth
            t.hall += hall_hit
            t.hall_low += hall.ci[1] < truth
            t.hall_high += hall.ci[0] > truth
            if not u.reasons:
                t.shown_before += 1
                t.hits_before += hit
            if "skewed" in u.reasons:
                t.skewed += 1
                t.skewed_hits += hit
                t.skewed_hall += hall_hit
                t.skewed_few += "few_users" in u.reasons
            after = shown_interval(u.reasons, name in INFLUENCE_VARIABLES)
            if after != "unreliable":
                t.shown_after += 1
                t.hits_after += hit if after == "normal" else hall_hit
    return out


def _cov(hits: int, n: int) -> str:
    if n == 0:
        return "— (none shown)"
    lo, hi = wilson(hits, n)
    return f"{hits / n:.1%} [{lo:.1%}, {hi:.1%}] of {n}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--users", default="200,2000")
    ap.add_argument("--seed", type=int, default=3636)
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    started = time.time()
    lines = [
        "| clicks | target | users | estimator | normal: coverage | normal: below / above | "
        "Hall: coverage | Hall: below / above | skew warning fires (of them < 40 users) | "
        "there: normal | there: Hall | before: shown without warning, coverage | after: "
        "shown without warning, coverage |",
        "|---|---|---:|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model in FAMILIES:
        for target in TARGETS:
            for users in (int(u) for u in a.users.split(",")):
                res = cell(model, target, users, a.runs, a.seed + users)
                for name, t in res.items():
                    n = t.runs
                    lines.append(
                        f"| {model} | {target} | {users:,} | {name} | {_cov(t.hits, n)} | "
                        f"{t.low / n:.1%} / {t.high / n:.1%} | {_cov(t.hall, n)} | "
                        f"{t.hall_low / n:.1%} / {t.hall_high / n:.1%} | "
                        f"{t.skewed / n:.0%} ({t.skewed_few / n:.0%}) | "
                        f"{_cov(t.skewed_hits, t.skewed)} | {_cov(t.skewed_hall, t.skewed)} | "
                        f"{t.shown_before / n:.0%}: {_cov(t.hits_before, t.shown_before)} | "
                        f"{t.shown_after / n:.0%}: {_cov(t.hits_after, t.shown_after)} |"
                    )
                    print(lines[-1], flush=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    header = [
        f"## Off-policy intervals that warn: coverage near and far (issue 36 item 4), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Commit {commit or '?'}; machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; "
        f"{time.time() - started:.0f} s. Command: `python benchmarks/bench_ope_coverage.py "
        f"--runs {a.runs} --users {a.users} --seed {a.seed} --record`: {a.runs} runs per "
        f"cell, the same draws for every column. Normal: the delta method's 95% interval; "
        "Hall: Hall's (1992) skewness-corrected interval on the per-user influence values. "
        f"The skew warning fires above {MAX_MEAN_SKEW:g} skewness of the mean of the "
        f"per-user weights; before: the normal interval shown when it does not fire and "
        f"the weights are worth {MIN_ESS_USERS:g} users; after: also Hall's where only the "
        "skewness fires (not for snrips, which the store gives no products of three). "
        "Coverages with their Wilson 95% interval and the runs they are over.",
        "",
    ]
    publish("\n".join([*header, *lines, ""]), a.record)


if __name__ == "__main__":
    main()
