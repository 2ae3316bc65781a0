"""Bias and coverage of the off-policy estimators on ranked logs with known truth
(docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators).

Per click model (position-based, cascade) × number of source users, ``--runs``
experiments of :func:`abeval.simulate.ranked.example_world` (three user types,
six items, three positions, a personalised Plackett–Luce logging policy, the
target's exact probabilities and exact true CTR). Each run's estimates go
through the statistics layer's own functions (:func:`abeval.stats.ope.estimate_terms`
on per-user sums of the store's per-user variables, computed here with numpy);
the first ``--store-runs`` runs of each cell also go through the real store
path (events CSV → ``ingest_file`` → SQL → ``ope_results``), and the largest
difference between the two paths is printed, so the numpy sums stand for the
SQL ones. Prints a Markdown table::

    python benchmarks/bench_ope.py --runs 500 --users 200,1000 [--record]

Columns: bias (mean estimate − truth, relative to the truth, with its Monte
Carlo standard error), coverage of the 95% normal interval (binomial se
√(0.95·0.05/runs) ≈ 1.0% at 500 runs), the mean effective sample size of the
estimator's weights over users ((Σ_u w_u)² / Σ_u w_u², as a share of the users,
w_u the user's sum of weights) and the mean share of Σ w·c carried by the top 1%
of users.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from abeval.simulate.ranked import (
    ClickModel,
    RankedWorld,
    event_rows,
    example_world,
    impressions,
    target_rows,
)
from abeval.stats.ope import Estimate, estimate_terms
from abeval.stats.ope_ranking import ESTIMATORS, STEP_ESTIMATORS, snrips_terms
from abeval.store.sql.ope_cascade import FOLDS, SMOOTH

RESULTS = Path(__file__).parent / "RESULTS.md"
CAP = 100.0
ALPHA = 0.05
NAMES = ("ips", "snips", "capped_ips", "ncis", "rips", "snrips", "sips", "cascade_dr")
#: Per estimator: the per-user weight sum and weighted clicks its diagnostics read.
WEIGHTS = {
    **dict.fromkeys(("ips", "snips"), ("w", "wc")),
    **dict.fromkeys(("capped_ips", "ncis"), ("k", "kc")),
    **dict.fromkeys(("rips", "snrips", "cascade_dr"), ("r", "rc")),
    "sips": ("s", "sc"),
}


@dataclass(frozen=True)
class Sums:
    """:class:`abeval.stats.ope.UserSums` from a matrix of per-user values."""

    users: int
    sums: dict[str, float]
    products: dict[tuple[str, str], float]


def user_table(world: RankedWorld, logs: pd.DataFrame) -> pd.DataFrame:
    """The store's per-user variables (abeval.store.sql.ope_parts, ope_cascade) with numpy."""
    k = world.positions
    items = world.log_scores.shape[1]
    n = len(logs) // k
    lists = logs["item"].str.slice(1).astype(int).to_numpy().reshape(n, k)
    types = logs["type"].to_numpy()[::k]
    users = pd.factorize(logs["user"].to_numpy()[::k], sort=True)[0]
    m = users.max() + 1
    c = logs["clicked"].to_numpy().reshape(n, k).astype(float)
    p = logs["propensity"].to_numpy().reshape(n, k)
    g = logs["propensity_given_above"].to_numpy().reshape(n, k)
    pos = np.arange(k)[None, :]
    w = world.marginals(world.target_scores)[types[:, None], lists, pos] / p
    s = world.target_scores[types]
    chosen = np.take_along_axis(s, lists, axis=1)
    above = np.hstack([np.zeros((n, 1)), np.cumsum(chosen, axis=1)[:, :-1]])
    rho = chosen / (s.sum(axis=1, keepdims=True) - above)
    big_w = np.cumprod(rho / g, axis=1)
    prev = np.hstack([np.ones((n, 1)), big_w[:, :-1]])
    whole = big_w[:, -1:] * np.ones((1, k))
    # Cascade-DR's click model, cross-fitted over folds of users in id order.
    fold = (users + 1) % FOLDS
    flat_items, flat_pos = lists.reshape(-1), np.tile(np.arange(k), n)
    flat_fold = np.repeat(fold, k)
    cn = np.zeros((FOLDS, items, k))
    cc = np.zeros((FOLDS, items, k))
    np.add.at(cn, (flat_fold, flat_items, flat_pos), 1.0)
    np.add.at(cc, (flat_fold, flat_items, flat_pos), c.reshape(-1))
    on, oc = cn.sum(axis=0) - cn, cc.sum(axis=0) - cc  # out of fold
    prior = oc.sum(axis=1) / np.maximum(on.sum(axis=1), 1e-300)  # (folds, k)
    qhat = (oc + SMOOTH * prior[:, None, :]) / (on + SMOOTH)  # (folds, items, k)
    q_logged = qhat[fold[:, None], lists, pos]
    taken = np.zeros((n, items), dtype=bool)
    dm = np.zeros((n, k))
    for j in range(k):
        free = np.where(taken, 0.0, s)
        dm[:, j] = (free / free.sum(axis=1, keepdims=True) * qhat[fold, :, j]).sum(axis=1)
        taken[np.arange(n), lists[:, j]] = True
    dr = prev * dm + big_w * (c - q_logged)
    capped = np.minimum(w, CAP)
    per_impression = {
        "wc": w * c,
        "w": w,
        "n": np.ones_like(w),
        "kc": capped * c,
        "k": capped,
        "c": c,
        "rc": big_w * c,
        "r": big_w,
        "sc": whole * c,
        "s": whole,
        "dr": dr,
    }
    for j in range(k):
        at = np.broadcast_to((pos == j).astype(float), (n, k))
        per_impression |= {f"a{j + 1}": big_w * c * at, f"b{j + 1}": big_w * at, f"n{j + 1}": at}
    return pd.DataFrame(
        {name: np.bincount(users, x.sum(axis=1), minlength=m) for name, x in per_impression.items()}
    )


def sums_of(table: pd.DataFrame) -> Sums:
    x = table.to_numpy()
    names = list(table.columns)
    prod = x.T @ x
    products = {
        (a, b): float(prod[i, j])
        for i, a in enumerate(names)
        for j, b in enumerate(names)
        if j >= i
    }
    return Sums(
        len(table), {a: float(v) for a, v in zip(names, x.sum(axis=0), strict=True)}, products
    )


def all_estimates(s: Sums, positions: int) -> dict[str, Estimate]:
    specs: dict[str, tuple[Mapping[str, int], ...]] = {
        name: ({num: 1, den: -1},) for name, (num, den) in {**ESTIMATORS, **STEP_ESTIMATORS}.items()
    }
    specs["snrips"] = snrips_terms(tuple(range(1, positions + 1)))
    return {name: estimate_terms(s, name, specs[name], ALPHA) for name in NAMES}


def user_diagnostics(table: pd.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Per estimator: ESS over users (users, and as a share of them), the top-1%
    users' share of Σ w·c."""
    out = {}
    m = len(table)
    top = max(1, int(np.ceil(0.01 * m)))
    for name, (wcol, wc) in WEIGHTS.items():
        wu = table[wcol].to_numpy()
        ess = wu.sum() ** 2 / (wu**2).sum() if (wu**2).sum() > 0 else float("nan")
        order = np.argsort(-wu, kind="stable")
        v = table[wc].to_numpy()
        share = v[order[:top]].sum() / v.sum() if v.sum() > 0 else float("nan")
        out[name] = (ess / m, share, ess)
    return out


def bootstrap_cover(
    table: pd.DataFrame, positions: int, truth: float, rng: np.random.Generator, b: int
) -> dict[str, bool]:
    """Whether the 95% percentile bootstrap over users (``b`` resamples of the
    per-user rows) covers ``truth``, per estimator."""
    x = table.to_numpy()
    m = len(x)
    counts = rng.multinomial(m, np.full(m, 1.0 / m), size=b).astype(float)
    sums = pd.DataFrame(counts @ x, columns=table.columns)
    est = {name: sums[num] / sums[den] for name, (num, den) in {**ESTIMATORS,
           **STEP_ESTIMATORS}.items()}  # fmt: skip
    est["snrips"] = (
        sum(sums[f"a{k}"] / sums[f"b{k}"] * sums[f"n{k}"] for k in range(1, positions + 1))
        / sums["n"]
    )
    out = {}
    for name, v in est.items():
        lo, hi = np.nanquantile(v.to_numpy(), [ALPHA / 2, 1 - ALPHA / 2])
        out[name] = bool(lo <= truth <= hi)
    return out


def store_check(world: RankedWorld, runs: list[pd.DataFrame], folder: Path) -> float:
    """The largest relative difference between the store path and the numpy path
    over ``runs`` (each a source arm's logs), all estimators, CTR and its se."""
    from abeval.analysis.ope import OpeOptions, ope_results
    from abeval.store import open_store
    from abeval.store.ingest import ingest_file

    rng = np.random.default_rng(99)
    worst = 0.0
    with open_store(str(folder / "s.duckdb")) as store:
        for i, logs in enumerate(runs):
            exp = f"run{i}"
            both = pd.concat([logs, impressions(world, rng, "treatment", 20, target=True)])
            event_rows(both, exp).to_csv(folder / f"e{i}.csv", index=False)
            target_rows(world, logs, "treatment").to_csv(folder / f"t{i}.csv", index=False)
            ingest_file(store, folder / f"e{i}.csv")
            with store.connect() as conn:
                options = OpeOptions(cap=CAP, target_propensities=str(folder / f"t{i}.csv"))
                section = ope_results(conn, exp, "control", ["treatment"], options, ALPHA)
            d = next(d for d in section.directions if d.source == "control")
            mine = all_estimates(sums_of(user_table(world, logs)), world.positions)
            for e in d.estimates:
                for a, b in ((e.ctr.value, mine[e.estimator].ctr.value),
                             (e.ctr.se, mine[e.estimator].ctr.se)):  # fmt: skip
                    assert a is not None and b is not None, (e.estimator, e.ctr)
                    worst = max(worst, abs(a - b) / abs(b))
    return worst


def cell(
    model: ClickModel, users: int, runs: int, store_runs: int, seed: int, boot: int
) -> dict[str, object]:
    world = example_world(model)
    truth = world.true_ctr()
    rng = np.random.default_rng(seed)
    values = {n: [] for n in NAMES}
    covered = {n: 0 for n in NAMES}
    boot_covered = {n: 0 for n in NAMES}
    per_run: list[tuple[str, float, float, bool, bool | None]] = []
    diag = {n: [] for n in NAMES}
    kept: list[pd.DataFrame] = []
    for r in range(runs):
        logs = impressions(world, rng, "control", users)
        if r < store_runs:
            kept.append(logs)
        table = user_table(world, logs)
        found = all_estimates(sums_of(table), world.positions)
        bc = bootstrap_cover(table, world.positions, truth, rng, boot) if boot else {}
        ud = user_diagnostics(table)
        for name, e in found.items():
            assert e.ctr.value is not None and e.ctr.ci is not None, (name, e.ctr)
            values[name].append(e.ctr.value)
            hit = e.ctr.ci[0] <= truth <= e.ctr.ci[1]
            covered[name] += hit
            boot_covered[name] += bc.get(name, False)
            per_run.append((name, ud[name][2], ud[name][1], hit, bc[name] if bc else None))
            diag[name].append(ud[name])
    worst = None
    if kept:
        with tempfile.TemporaryDirectory() as tmp:
            worst = store_check(world, kept, Path(tmp))
    return {
        "truth": truth,
        "values": values,
        "covered": covered,
        "boot_covered": boot_covered,
        "boot": boot,
        "per_run": per_run,
        "diag": diag,
        "store_worst": worst,
        "store_runs": len(kept),
    }


def table(results: dict[tuple[str, int], dict[str, object]], runs: int) -> list[str]:
    lines = [
        "| click model | users | estimator | assumes | bias (rel.) | ± MC se | coverage 95% | "
        "bootstrap coverage | ESS users (share) | top-1% share |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    from abeval.stats.ope_ranking import ASSUMPTIONS

    for (model, users), res in results.items():
        truth = float(res["truth"])  # type: ignore[arg-type]
        for name in NAMES:
            v = np.array(res["values"][name])  # type: ignore[index]
            bias = (v.mean() - truth) / truth
            mc = v.std(ddof=1) / np.sqrt(len(v)) / truth
            cov = res["covered"][name] / runs  # type: ignore[index]
            boot = res["boot_covered"][name] / runs if res["boot"] else None  # type: ignore[index]
            d = np.array(res["diag"][name])  # type: ignore[index]
            lines.append(
                f"| {model} | {users:,} | {name} | {ASSUMPTIONS[name]} | {bias:+.2%} | {mc:.2%} | "
                f"{cov:.1%} | {'—' if boot is None else f'{boot:.1%}'} | "
                f"{np.nanmean(d[:, 2]):.0f} ({np.nanmean(d[:, 0]):.1%}) | "
                f"{np.nanmean(d[:, 1]):.1%} |"
            )
    return lines


#: Lower edges of the bins of the coverage tables: ESS over users, top-1% share.
ESS_BINS = (0, 10, 20, 30, 40, 60, 80, 160, 320)
TOP_BINS = (0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)


def by_bins(
    results: dict[tuple[str, int], dict[str, object]], what: int, edges: tuple[float, ...]
) -> list[str]:
    """Coverage of the normal and the bootstrap interval by ESS over users
    (``what`` 1) or by the top 1% of users' share of Σ w·c (``what`` 2), over
    every run of every cell, for the estimators valid under its click model."""
    valid = {"position_based": set(NAMES), "cascade": {"rips", "snrips", "sips", "cascade_dr"}}
    rows = [
        (run[what], run[3], run[4])
        for (model, _), res in results.items()
        for run in res["per_run"]  # type: ignore[attr-defined]
        if run[0] in valid[model]
    ]
    title = "ESS over users" if what == 1 else "top 1% share of Σ w·c"
    lines = [
        f"| {title} | estimates | normal coverage | bootstrapped | bootstrap coverage |",
        "|---|---:|---:|---:|---:|",
    ]
    for lo, hi in itertools.pairwise([*edges, float("inf")]):
        sel = [(h, b) for x, h, b in rows if lo <= x < hi]
        if not sel:
            continue
        n = len(sel)
        boots = [b for _, b in sel if b is not None]
        label = f"{lo:g}–{hi:g}" if hi != float("inf") else f"≥ {lo:g}"
        shown = f"{sum(boots) / len(boots):.1%}" if boots else "—"
        lines.append(
            f"| {label} | {n:,} | {sum(h for h, _ in sel) / n:.1%} | {len(boots):,} | {shown} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--users", default="200,1000")
    ap.add_argument("--store-runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--boot", type=int, default=200, help="bootstrap resamples (0: none)")
    ap.add_argument(
        "--boot-max-users", type=int, default=200, help="bootstrap only cells this small"
    )
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    started = time.time()
    results = {}
    notes = []
    for model in ("position_based", "cascade"):
        for users in (int(u) for u in a.users.split(",")):
            boot = a.boot if users <= a.boot_max_users else 0
            res = cell(model, users, a.runs, a.store_runs, a.seed + users, boot)  # type: ignore[arg-type]
            results[(model, users)] = res
            notes.append(
                f"- {model}, {users:,} users: truth {res['truth']:.6f}; store path on "
                f"{res['store_runs']} runs, largest relative difference from the numpy path "
                f"{res['store_worst'] or 0:.1e}"
            )
            print(notes[-1], flush=True)
    lines = [
        *table(results, a.runs),
        "",
        *by_bins(results, 1, ESS_BINS),
        "",
        *by_bins(results, 2, TOP_BINS),
    ]
    load = os.getloadavg()
    header = [
        f"## Off-policy estimators on ranked logs: bias and coverage (issue 20), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average {load[0]:.1f} at the end; "
        f"{time.time() - started:.0f} s. Command: `python benchmarks/bench_ope.py --runs "
        f"{a.runs} --users {a.users} --store-runs {a.store_runs} --boot {a.boot} "
        f"--boot-max-users {a.boot_max_users} --record`. "
        f"{a.runs} runs per cell; world: `abeval.simulate.ranked.example_world` "
        "(3 user types, 6 items, 3 positions, 1-4 requests per user).",
        "",
    ]
    publish("\n".join([*header, *lines, "", *notes, ""]), a.record)


def publish(out: str, record: bool) -> None:
    """Print a benchmark's section and, with ``record``, append it to RESULTS.md."""
    print(out)
    if record:
        with RESULTS.open("a") as f:
            f.write("\n" + out)


if __name__ == "__main__":
    main()
