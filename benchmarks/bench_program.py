"""How good are a program's statistics (issue 32 item 6): simulated programs of
k experiments with known true effects, each experiment's lift measured with a
realistic standard error, shipped on significance, and analysed as
``abeval program`` analyses a history (:mod:`abeval.stats.program`).

Design, per run: standard errors se ~ lognormal around 1.5% relative lift
(log-sd 0.35: most between 0.8% and 3%); true effects θ drawn from

- ``normal``: N(0.2%, 1%²);
- ``t3``: 0.2% + 0.6%·t₃ (sd ≈ 1%, heavy tails);
- ``nulls70``: 0 with probability 0.7, else N(1%, 1.5%²);

lift = θ + N(0, se²); an experiment ships when lift/se > 1.96 (one-sided 2.5%).
Per cell (prior × k, ``--runs`` runs) it reports, with Wilson intervals where
a share is estimated:

- the naive impact's bias: mean of (Σ shipped lifts − Σ shipped θ), and the mean
  true Σ θ for scale;
- the share of the naive bias the de-biased impact keeps (its bias over the
  naive one);
- the de-biased impact's bias and its 95% interval's coverage of Σ shipped θ
  (runs with at least one shipped);
- the shrunken lifts' mean squared error over the raw lifts' (all experiments);
- the coverage of each experiment's 95% posterior interval, all experiments
  and shipped ones (pooled over runs: experiments of one run share a fitted
  prior, so the Wilson interval is somewhat too narrow);
- how often the mixture prior was chosen.

The prior is fitted at every k here (``min_experiments=0``). The small-k rows
(the default sizes, 6 to 20) set :data:`abeval.stats.program.MIN_EXPERIMENTS`
by the rule :func:`meets_rule` states (docs/metrics.md#a-program-of-experiments);
after the table the script prints, per k, whether the normal truth's row meets
it::

    nice -n 10 python benchmarks/bench_program.py [--runs 300] [--sizes 6,8,10,13,16,20] \
        [--priors normal,t3,nulls70]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from abeval.stats.program import fit_prior, impact, posterior_arrays, wilson_interval

PRIORS = ("normal", "t3", "nulls70")


def effects(kind: str, k: int, rng: np.random.Generator) -> Any:
    """True effects of k experiments from the named distribution."""
    if kind == "normal":
        return rng.normal(0.002, 0.01, k)
    if kind == "t3":
        return 0.002 + 0.006 * rng.standard_t(3, k)
    return np.where(rng.random(k) < 0.7, 0.0, rng.normal(0.01, 0.015, k))


def run_cell(kind: str, k: int, runs: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, k, PRIORS.index(kind)])
    naive, corrected, truth, covered, with_shipped = [], [], [], 0, 0
    sq_shrunk = sq_raw = 0.0
    hits = total = shipped_hits = shipped_total = mixtures = 0
    for _ in range(runs):
        se = rng.lognormal(np.log(0.015), 0.35, k)
        theta = effects(kind, k, rng)
        y = theta + rng.normal(0.0, se)
        ship = y / se > 1.96
        prior = fit_prior(y, se, min_experiments=0)
        mixtures += prior.kind == "mixture"
        mean, _, low, high, _ = posterior_arrays(prior, y, se)
        sq_shrunk += float(np.sum((mean - theta) ** 2))
        sq_raw += float(np.sum((y - theta) ** 2))
        inside = (low <= theta) & (theta <= high)
        hits += int(np.sum(inside))
        total += k
        shipped_hits += int(np.sum(inside[ship]))
        shipped_total += int(np.sum(ship))
        if ship.any():
            summed = impact(prior, y, se, ship)
            assert summed.debiased is not None and summed.low is not None
            assert summed.high is not None
            true_sum = float(np.sum(theta[ship]))
            naive.append(summed.raw - true_sum)
            corrected.append(summed.debiased - true_sum)
            truth.append(true_sum)
            covered += summed.low <= true_sum <= summed.high
            with_shipped += 1
    return {
        "prior": kind, "k": k, "runs": runs, "with_shipped": with_shipped,
        "true_sum": float(np.mean(truth)) if truth else float("nan"),
        "naive_bias": float(np.mean(naive)) if naive else float("nan"),
        "corrected_bias": float(np.mean(corrected)) if corrected else float("nan"),
        "corrected_bias_se": float(np.std(corrected) / np.sqrt(len(corrected)))
        if corrected else float("nan"),
        "impact_coverage": (covered, with_shipped),
        "mse_ratio": sq_shrunk / sq_raw,
        "coverage": (hits, total),
        "shipped_coverage": (shipped_hits, shipped_total),
        "mixture_share": mixtures / runs,
    }  # fmt: skip


#: The rule's bounds: the de-biased impact keeps at most this share of the
#: naive bias, and its interval and the posterior intervals cover at least
#: :data:`RULE_COVERAGE` (the upper end of the coverage's Wilson interval, so a
#: row is failed only on evidence that it covers less).
RULE_BIAS_LEFT = 0.25
RULE_COVERAGE = 0.93


def bias_left(r: dict[str, Any]) -> float:
    """The share of the naive bias the de-biased impact keeps."""
    return float(r["corrected_bias"] / r["naive_bias"])


def meets_rule(r: dict[str, Any]) -> bool:
    """Whether a cell meets the rule that sets ``MIN_EXPERIMENTS`` (applied to the
    normal truth): the de-biased impact keeps at most :data:`RULE_BIAS_LEFT` of
    the naive bias (in absolute value), and neither its interval's coverage nor
    the posterior intervals' is below :data:`RULE_COVERAGE` beyond doubt (the
    Wilson interval's upper end at least that)."""
    covers = all(
        wilson_interval(*r[key])[1] >= RULE_COVERAGE for key in ("impact_coverage", "coverage")
    )
    return abs(bias_left(r)) <= RULE_BIAS_LEFT and covers


def _share(pair: tuple[int, int]) -> str:
    n, d = pair
    if d == 0:
        return "n/a"
    low, high = wilson_interval(n, d)
    return f"{n / d:.1%} [{low:.1%}, {high:.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sizes", default="6,8,10,13,16,20")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--priors", default=",".join(PRIORS))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        "| prior | k | runs (with a ship) | mean true Σθ shipped | naive bias | "
        "de-biased bias (± se) | bias left | impact interval coverage | MSE shrunk/raw | "
        "posterior coverage, all | posterior coverage, shipped | mixture chosen | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    verdicts: list[str] = []
    for kind in args.priors.split(","):
        for k in sizes:
            started = time.perf_counter()
            r = run_cell(kind, k, args.runs, args.seed)
            took = time.perf_counter() - started
            print(
                f"| {kind} | {k} | {r['runs']} ({r['with_shipped']}) | {r['true_sum']:+.4f} | "
                f"{r['naive_bias']:+.4f} | {r['corrected_bias']:+.4f} "
                f"(± {r['corrected_bias_se']:.4f}) | {bias_left(r):.0%} | "
                f"{_share(r['impact_coverage'])} | "
                f"{r['mse_ratio']:.2f} | {_share(r['coverage'])} | "
                f"{_share(r['shipped_coverage'])} | {r['mixture_share']:.0%} | {took:.0f} |",
                flush=True,
            )
            if kind == "normal":
                verdicts.append(f"k = {k}: {'meets' if meets_rule(r) else 'fails'} the rule")
    if verdicts:
        print("\n".join(["", "normal truth:", *verdicts]))


if __name__ == "__main__":
    main()
