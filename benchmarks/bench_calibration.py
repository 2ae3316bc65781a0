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

``--daily-looks`` is the A/A read every day (docs/metrics.md#decision): each run
enrols ``--users-per-day`` users per arm a day for 14 days and is judged at the
end of every day by abeval's decision rule (:func:`abeval.analysis.decision.decide`,
two primary metrics Holm-corrected and a guardrail), in three modes: the fixed-
horizon decision at every look (the old default), no plan recorded (the decision
reads the always-valid intervals at every look) and a plan of 14 days (the fixed-
horizon decision once the plan is reached, ``keep_running`` before). It prints
the share of runs with a ``ship`` at any look, under no effect and under a +3%
lift of both primary metrics (the power of each mode)::

    python benchmarks/bench_calibration.py --daily-looks --runs 2000 [--record]

Its "no plan" mode is the mixture sequence the decision read before issue 36;
the decision without a plan now reads group-sequential intervals, measured
through the report's own path by ``benchmarks/bench_decisions.py``.

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

from abeval.analysis.report_model import DecisionInput
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


#: The daily-look population: two binary primary metrics (a click-through user
#: rate and conversion, per-user 0/1 with these control rates) and a normal
#: per-user guardrail (impressions per user, mean and sd); independent per user.
LOOK_PRIMARIES = {"ctr": 0.30, "conversion": 0.10}
LOOK_GUARDRAIL = ("impressions_per_user", 20.0, 8.0)
TARGET_MDE = 0.02
MODES = ("fixed at every look (old default)", "no plan: sequential", "plan: fixed at the end")


def _arm_days(
    rng: np.random.Generator, runs: int, looks: int, users: int, lift: float
) -> dict[str, np.ndarray]:
    """Cumulative per-look sufficient statistics of one arm, ``runs`` × ``looks``:
    successes of each primary, and the guardrail's sum and raw sum of squares
    (a normal per-user value: each day's mean and centred sum of squares are drawn
    exactly, N(μ, σ²/n) and σ²χ²(n − 1))."""
    out = {
        name: np.cumsum(rng.binomial(users, rate * (1 + lift), (runs, looks)), axis=1)
        for name, rate in LOOK_PRIMARIES.items()
    }
    _, mu, sd = LOOK_GUARDRAIL
    means = rng.normal(mu, sd / math.sqrt(users), (runs, looks))
    ss = sd * sd * rng.chisquare(users - 1, (runs, looks))
    out["sum"] = np.cumsum(means * users, axis=1)
    out["raw_ss"] = np.cumsum(ss + users * means * means, axis=1)
    return out


def _look_decision(
    c: dict[str, np.ndarray], t: dict[str, np.ndarray], i: int, k: int, n: int, seq: bool
) -> str:
    """abeval's decision at look ``k`` of run ``i`` (``n`` users per arm by then).
    The guardrail is compared only when a primary metric is significantly better:
    without one the decision cannot be ``ship``, the only one counted."""
    from abeval.analysis.decision import comparison_input, decide
    from abeval.analysis.online_metrics import BUILTIN_CATALOG
    from abeval.stats import adjust_comparisons, compare
    from abeval.stats.sufficient import MeanStats, ProportionStats

    def stats(arm: dict[str, np.ndarray], name: str) -> ProportionStats | MeanStats:
        if name in LOOK_PRIMARIES:
            return ProportionStats.from_counts(n, arm[name][i, k])
        return MeanStats.from_sums(n, arm["sum"][i, k], arm["raw_ss"][i, k])

    def family(names: list[str], role: str) -> list[DecisionInput]:
        found = [compare(stats(c, m), stats(t, m), sequential=seq, nonnegative=True) for m in names]
        adjusted = adjust_comparisons(found, "holm")
        return [
            comparison_input(  # type: ignore[arg-type]
                m, role, r, TARGET_MDE, lower_is_better=BUILTIN_CATALOG.lower_is_better(m)
            )
            for m, r in zip(names, adjusted, strict=True)
        ]

    primaries = family(list(LOOK_PRIMARIES), "primary")
    if not any(p.direction == "better" for p in primaries):
        return "not ship"
    guardrails = family([LOOK_GUARDRAIL[0]], "guardrail")
    return decide(primaries, guardrails, False, TARGET_MDE, BUILTIN_CATALOG)[0]


def daily_looks(
    runs: int, users_per_day: int, looks: int, seed: int, lift: float
) -> dict[str, float]:
    """The share of ``runs`` with a ``ship`` at any look, per mode (:data:`MODES`)."""
    from abeval.analysis.decision import decision_basis, gate, plan_progress
    from abeval.analysis.report_model import ReportOptions

    rng = np.random.default_rng(seed)
    c = _arm_days(rng, runs, looks, users_per_day, 0.0)
    t = _arm_days(rng, runs, looks, users_per_day, lift)
    planned = ReportOptions(plan_days=looks)
    shipped = dict.fromkeys(MODES, 0)
    for i in range(runs):
        fixed_any = seq_any = plan_ship = False
        for k in range(looks):  # once a mode has shipped, later looks cannot change it
            n = users_per_day * (k + 1)
            progress = plan_progress(planned, k + 1, 2 * n)
            basis = decision_basis(planned, progress)
            if not fixed_any or basis == "fixed_plan_reached":
                fixed = _look_decision(c, t, i, k, n, seq=False)
                fixed_any |= fixed == "ship"
                plan_ship |= gate((fixed, ""), basis, progress)[0] == "ship"  # type: ignore[arg-type]
            if not seq_any:
                seq_any = _look_decision(c, t, i, k, n, seq=True) == "ship"
        shipped[MODES[0]] += fixed_any
        shipped[MODES[1]] += seq_any
        shipped[MODES[2]] += plan_ship
    return {mode: k / runs for mode, k in shipped.items()}


def daily_table(runs: int, users_per_day: int, seed: int) -> str:
    """The ``--daily-looks`` table: A/A ship rates and the power for +3%, per mode."""
    start = time.perf_counter()
    looks = 14
    null = daily_looks(runs, users_per_day, looks, seed, 0.0)
    power = daily_looks(runs, users_per_day, looks, seed + 1, 0.03)
    seconds = time.perf_counter() - start
    se = math.sqrt(0.025 * 0.975 / runs)
    lines = [
        f"{runs:,} runs per column, {looks} daily looks, {users_per_day:,} new users per arm a "
        f"day ({users_per_day * looks:,} per arm at the end); primaries CTR-like (0.30) and "
        f"conversion (0.10) Holm-corrected, guardrail impressions per user; alpha 0.05, seed "
        f"{seed}; binomial standard error of a 2.5% rate {se:.2%}; {seconds:.0f} s",
        "",
        "| mode | A/A: ship at any look | +3% on both primaries: ship at any look (power) |",
        "|---|---|---|",
    ]
    for mode in MODES:
        lines.append(f"| {mode} | {null[mode]:.2%} | {power[mode]:.2%} |")
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
    parser.add_argument(
        "--daily-looks", action="store_true", help="ship rates of an A/A read every day"
    )
    parser.add_argument("--users-per-day", type=int, default=1000, help="--daily-looks, per arm")
    args = parser.parse_args()
    if args.explain:
        print(explain(args.runs, args.users, args.seed, args.alpha))
        return
    if args.daily_looks:
        text = daily_table(args.runs, args.users_per_day, args.seed)
        print(text)
        if args.record:
            _record(
                "Daily looks: ship at any look",
                f"--daily-looks --runs {args.runs} --users-per-day {args.users_per_day} "
                f"--seed {args.seed}",
                text,
            )
        return
    text = table(args.runs, args.users, args.seed, args.alpha, args.sigma)
    print(text)
    if args.record:
        _record(
            "A/A calibration",
            f"--runs {args.runs} --seed {args.seed} --sigma {args.sigma:g}",
            text,
        )


def _record(title: str, arguments: str, text: str) -> None:
    """Append ``text`` to RESULTS.md under ``title``, with the machine and the command."""
    machine = (
        f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    with RESULTS.open("a", encoding="utf-8") as f:
        f.write(
            f"\n## {title}, {stamp}\n\nMachine: {machine}; load average {load}. Command: "
            f"`python benchmarks/bench_calibration.py {arguments} --record`.\n\n{text}\n"
        )


if __name__ == "__main__":
    main()
