"""The decision's error rates under daily looks: false ships, power, false roll-backs.

Simulates experiments of two arms whose per-user sufficient statistics are drawn
with numpy (no store): each user has ``1 + Poisson(7)`` impressions and clicks
``Binomial(impressions, p)`` with ``p ~ Beta`` around a 10% CTR. Each day's
cumulative sums become the store's :class:`~abeval.store.sql.online_variables.Moments`
and go through the report's own path: :func:`abeval.analysis.comparisons.metric_results`
(the comparisons, Holm within each family), the decision's basis and plan
(:func:`abeval.analysis.decision.decision_basis`, ``plan_progress``) and
:func:`abeval.analysis.decision.decisions`. The primary metric is CTR (ratio,
delta method), the guardrail impressions per user with a 2% margin; the target
MDE is the +3% the runs are sized for.

Sizes: the fixed-horizon test planned for 80% power at +3% CTR (α = 0.05,
``required_users``) over ``H`` days, its users spread evenly over the days; the
runs last ``H + 7`` days. Cells:

* A/A and +3% CTR, ``H`` = 14 and 21, three ways of reading: *no plan* (the
  decision read at every day 1..H, a ``ship`` at any look counts), *plan reached*
  (a plan of H days and its users, read once on day H) and *past the plan* (the
  same plan, read every day H..H+7: a ship at any of them counts);
* guardrail impressions per user with a true harm of 0, 1% (inside the 2% margin),
  2% (at it) and 3% (beyond it), the primary at +3% CTR, ``H`` = 14, no plan and
  plan reached: the share of runs rolled back.

Each rate is printed with its runs and a 95% Wilson interval. The numbers of the
code on the path (``--label``) are written to a JSON file, so the code before a
change and after it can be run on the same seeds and printed side by side::

    PYTHONPATH=/path/to/old/worktree python benchmarks/bench_decisions.py --label before
    python benchmarks/bench_decisions.py --label after --compare before [--record]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "RESULTS.md"
OUT = Path(__file__).parent / "out"
LIFT = 0.03
MARGIN = 0.02
HARMS = (0.0, 0.01, 0.02, 0.03)
EXTRA_DAYS = 7
IMPRESSIONS = 7.0  # impressions per user: 1 + Poisson(7)
CTR = 0.10
CONCENTRATION = 20.0  # per-user click propensity ~ Beta(CTR·κ, (1 − CTR)·κ)


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95% Wilson score interval of a binomial proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Arm:
    """Cumulative raw sums of one arm, ``runs`` × ``days``."""

    n: np.ndarray
    clicks: np.ndarray
    impressions: np.ndarray
    clicks2: np.ndarray
    impressions2: np.ndarray
    cross: np.ndarray

    def moments(self, run: int, day: int) -> Any:
        from abeval.store.sql.online_variables import Moments

        n = int(self.n[run, day])
        c, i = float(self.clicks[run, day]), float(self.impressions[run, day])
        return Moments(
            n=n,
            sums={"clicks": c, "impressions": i},
            cross={
                ("clicks", "clicks"): float(self.clicks2[run, day]) - c * c / n,
                ("impressions", "impressions"): float(self.impressions2[run, day]) - i * i / n,
                ("clicks", "impressions"): float(self.cross[run, day]) - c * i / n,
            },
        )


def simulate_arm(
    rng: np.random.Generator, runs: int, days: int, per_day: int, lift: float, harm: float
) -> Arm:
    """One arm: ``per_day`` new users a day; CTR times 1 + ``lift``, impressions per
    user times 1 − ``harm``."""
    sums = {k: np.zeros((runs, days)) for k in ("c", "i", "c2", "i2", "ci")}
    for d in range(days):
        extra = rng.poisson(IMPRESSIONS * (1 - harm) - harm, (runs, per_day))
        imps = 1 + extra
        p = rng.beta(CTR * CONCENTRATION, (1 - CTR) * CONCENTRATION, (runs, per_day))
        clicks = rng.binomial(imps, np.minimum(p * (1 + lift), 1.0))
        sums["c"][:, d] = clicks.sum(axis=1)
        sums["i"][:, d] = imps.sum(axis=1)
        sums["c2"][:, d] = (clicks * clicks).sum(axis=1)
        sums["i2"][:, d] = (imps * imps).sum(axis=1)
        sums["ci"][:, d] = (clicks * imps).sum(axis=1)
    cum = {k: np.cumsum(v, axis=1) for k, v in sums.items()}
    n = np.cumsum(np.full((runs, days), per_day), axis=1)
    return Arm(n, cum["c"], cum["i"], cum["c2"], cum["i2"], cum["ci"])


def planned_users(seed: int) -> int:
    """Total users (both arms) of the fixed-horizon test with 80% power at +3% CTR."""
    from abeval.analysis.online_metrics import BUILTIN_CATALOG, arm_stats
    from abeval.stats import required_users

    pilot = simulate_arm(np.random.default_rng(seed), 1, 1, 200_000, 0.0, 0.0)
    stats = arm_stats(BUILTIN_CATALOG.metrics["ctr"], pilot.moments(0, 0), False)
    need = required_users(stats.mean, stats.variance, LIFT, alpha=0.05, power=0.8)
    assert need.total_users is not None
    return need.total_users


def decision_at(control: Arm, treatment: Arm, run: int, day: int, o: Any) -> str:
    """The report's decision for run ``run`` after ``day + 1`` days under options ``o``."""
    from abeval.analysis import decision as rule
    from abeval.analysis.comparisons import metric_results
    from abeval.analysis.online_metrics import BUILTIN_CATALOG
    from abeval.analysis.report_model import Health
    from abeval.stats.results import SrmResult

    moments = {"control": control.moments(run, day), "treatment": treatment.moments(run, day)}
    users = moments["control"].n + moments["treatment"].n
    daily = [
        (
            f"2026-01-{k + 1:02d}",
            {"control": control.moments(run, k), "treatment": treatment.moments(run, k)},
        )
        for k in range(day + 1)
    ]
    if hasattr(rule, "judged_results"):  # the rule of this branch
        from abeval.analysis.power_rows import power_rows

        results, plain = metric_results(moments, "control", ["treatment"], o, BUILTIN_CATALOG)
        power = power_rows(plain, daily, "control", ["treatment"], o)
        judged, basis, progress = rule.judged_results(
            results, moments, daily, "control", ["treatment"], o, BUILTIN_CATALOG, power, day + 1
        )
    else:  # the rule before it (abeval.analysis.session.judged)
        progress = rule.plan_progress(o, day + 1, users)
        basis = rule.decision_basis(o, progress)
        judged_o = replace(o, sequential=True) if basis == "sequential_no_plan" else o
        judged = metric_results(moments, "control", ["treatment"], judged_o, BUILTIN_CATALOG)[0]
    srm = SrmResult("ok", "", (users // 2, users // 2), None, None, None, 0.5, 0.001, False)
    health = Health(srm, users, users, 0, 0, 0, 0, 0, 0, 0, None, None, ())
    found = rule.decisions(judged, health, (), o, BUILTIN_CATALOG, basis=basis, progress=progress)
    return found[0].decision


def run_cell(
    runs: int, horizon: int, lift: float, harm: float, seed: int, total: int, modes: tuple[str, ...]
) -> dict[str, dict[str, int]]:
    """Counts of ship and roll_back per reading mode over ``runs`` runs."""
    from abeval.analysis.report_model import ReportOptions

    per_day = math.ceil(total / 2 / horizon)
    days = horizon + EXTRA_DAYS
    rng = np.random.default_rng(seed)
    control = simulate_arm(rng, runs, days, per_day, 0.0, 0.0)
    treatment = simulate_arm(rng, runs, days, per_day, lift, harm)
    base = ReportOptions(
        primary=("ctr",),
        guardrails=("impressions_per_user",),
        secondary=(),
        margins=(("impressions_per_user", MARGIN),),
        cuped_days=0,
        target_mde=LIFT,
        daily=False,
        offline=False,
    )
    planned = replace(base, plan_users=2 * per_day * horizon, plan_days=horizon)
    looks = {
        "no plan": (base, range(horizon)),
        "plan reached": (planned, range(horizon - 1, horizon)),
        "past the plan": (planned, range(horizon - 1, days)),
    }
    counts = {m: {"ship": 0, "roll_back": 0, "runs": runs} for m in modes}
    for mode in modes:
        o, span = looks[mode]
        for r in range(runs):
            seen: set[str] = set()
            for d in span:
                seen.add(decision_at(control, treatment, r, d, o))
                if {"ship", "roll_back"} <= seen:
                    break
            for verdict in ("ship", "roll_back"):
                counts[mode][verdict] += verdict in seen
            if (r + 1) % 50 == 0 and r + 1 < runs:  # a long cell stopped early keeps these
                so_far = {k: counts[mode][k] for k in ("ship", "roll_back")}
                print(f"  {mode}: {r + 1} runs {so_far}", flush=True)
    return counts


def selected(key: str, only: str | None) -> bool:
    """Whether cell ``key`` is run: every cell without ``only``, the one ``key``
    with ``only`` ending in ``$`` (e.g. ``primary|14|0.0$``), else those holding it."""
    if only is None:
        return True
    return key == only[:-1] if only.endswith("$") else only in key


def cells(
    runs: int,
    seed: int,
    guardrail_runs: int | None = None,
    only: str | None = None,
    modes: tuple[str, ...] = ("no plan", "plan reached", "past the plan"),
) -> dict[str, Any]:
    """Every cell of the module docstring (only those whose key holds ``only``),
    read in ``modes``."""
    total = planned_users(seed)
    out: dict[str, Any] = {"planned_users": total, "cells": {}}
    primary_modes = modes
    s = seed
    for horizon in (14, 21):
        for lift in (0.0, LIFT):
            s += 1
            key = f"primary|{horizon}|{lift}"
            if not selected(key, only):
                continue
            out["cells"][key] = run_cell(runs, horizon, lift, 0.0, s, total, primary_modes)
            print(key, out["cells"][key], flush=True)
    for harm in HARMS:
        s += 1
        key = f"guardrail|14|{harm}"
        if not selected(key, only):
            continue
        out["cells"][key] = run_cell(
            guardrail_runs or runs, 14, LIFT, harm, s, total, primary_modes[:2]
        )
        print(key, out["cells"][key], flush=True)
    return out


def rate(counts: dict[str, int], what: str) -> str:
    k, n = counts[what], counts["runs"]
    lo, hi = wilson(k, n)
    return f"{k / n:.1%} [{lo:.1%}, {hi:.1%}] ({k}/{n})"


def tables(results: dict[str, dict[str, Any]]) -> str:
    """Markdown tables, one column per label (e.g. before, after)."""
    labels = list(results)
    first = results[labels[-1]]  # its cells; a label without one shows a dash
    head = " | ".join(labels)
    lines = [
        f"Planned size: {first['planned_users']:,} users in all (80% power at +3% CTR, "
        "α = 0.05, fixed horizon); each rate with its 95% Wilson interval and its "
        "runs (k of n)",
        "",
        f"| days | truth | reading | measure | {head} |",
        "|---|---|---|---|" + "---|" * len(labels),
    ]
    for key in first["cells"]:
        kind, horizon, value = key.split("|")
        for mode in first["cells"][key]:
            if kind == "primary":
                truth = "A/A" if float(value) == 0 else "+3% CTR"
                what = "ship"
                measure = "false ship" if float(value) == 0 else "ship (power)"
            else:
                truth = f"guardrail harm {float(value):.0%} (margin 2%)"
                what = "roll_back"
                measure = "roll-back"
            row = [
                rate(results[lab]["cells"][key][mode], what)
                if mode in results[lab]["cells"].get(key, {})
                else "–"
                for lab in labels
            ]
            lines.append(f"| {horizon} | {truth} | {mode} | {measure} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--guardrail-runs", type=int, help="runs of the guardrail cells")
    parser.add_argument(
        "--only",
        help="the cells whose key holds this, e.g. 'primary|14' (with a final $ the one "
        "cell of that key, e.g. 'primary|14|0.0$': 'primary|14|0.0' also holds the +3% cell)",
    )
    parser.add_argument("--modes", default="no plan,plan reached,past the plan")
    parser.add_argument("--label", default="current")
    parser.add_argument("--compare", action="append", default=[], help="labels run before")
    parser.add_argument("--record", action="store_true", help="append the table to RESULTS.md")
    args = parser.parse_args()
    start = time.perf_counter()
    modes = tuple(args.modes.split(","))
    found = cells(args.runs, args.seed, args.guardrail_runs, args.only, modes)
    found["seconds"] = time.perf_counter() - start
    OUT.mkdir(exist_ok=True)
    (OUT / f"decisions-{args.label}.json").write_text(json.dumps(found, indent=1))
    results = {lab: json.loads((OUT / f"decisions-{lab}.json").read_text()) for lab in args.compare}
    results[args.label] = found
    text = tables(results)
    print(text)
    if args.record:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write(
                f"\n## Decisions under daily looks, {stamp}\n\nMachine: {os.cpu_count()} cores, "
                f"Python {platform.python_version()}, numpy {np.__version__}; load average "
                f"{load}; seed {args.seed}; {found['seconds']:.0f} s for `{args.label}`. "
                f"Command: `python benchmarks/bench_decisions.py --runs {args.runs} "
                f"--label {args.label}"
                + "".join(f" --compare {c}" for c in args.compare)
                + " --record`.\n\n"
                + text
                + "\n"
            )


if __name__ == "__main__":
    main()
