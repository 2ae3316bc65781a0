"""How often the report calls an off-policy prediction *consistent* with the online
lift when the target probabilities are exact (docs/metrics.md#predicted-against-observed).

Each run simulates one two-arm experiment of the demo history's kind
(abeval.simulate.series: a random true CTR lift in [-10%, +10%]; personalised
Plackett–Luce logging), records the target's
exact probabilities with it (as ``abeval experiment set --target-propensities``
does) and reads both directions of the report's off-policy section: z =
(predicted − observed) / √(se_pred² + se_obs²) of the headline (snips). With
right propensities and right standard errors, |z| < 1.96 in at least 95% of
directions (more, since the shared baseline makes se an upper bound) and the
mean z is near 0.

    python benchmarks/bench_ope_consistency.py --runs 200 --users 600
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np


def one_run(seed: int, users: int, folder: Path) -> list[tuple[float, str]]:
    from abeval.analysis.ope import OpeOptions, ope_results
    from abeval.analysis.ope_file import target_file
    from abeval.simulate import simulate_with_target, write_events
    from abeval.simulate.series import SeriesConfig
    from abeval.store import open_store
    from abeval.store.experiments import set_settings
    from abeval.store.ingest import ingest_file

    lift = float(np.random.default_rng(seed).uniform(-0.1, 0.1))
    # the demo history's experiment (abeval.simulate.series), at this size and lift
    config = replace(
        SeriesConfig().base,
        experiment=f"run-{seed}",
        arms=("control", "treatment"),
        users=users,
        seed=seed,
        true_ctr_lift={"treatment": lift},
    )
    events, target = simulate_with_target(config)
    write_events(events, folder / "e.csv", quote=False)
    write_events(target, folder / "t.csv", quote=False)
    db = folder / f"s{seed}.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, folder / "e.csv")
        set_settings(
            store, config.experiment, "control", None, targets=target_file(folder / "t.csv")
        )
        with store.connect() as conn:
            section = ope_results(
                conn, config.experiment, "control", ["treatment"], OpeOptions(), 0.05
            )
    db.unlink()
    out = []
    for d in section.directions:
        if d.difference is not None and d.difference.z is not None and d.difference.verdict:
            out.append((d.difference.z, d.difference.verdict))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--users", type=int, default=600)
    args = parser.parse_args()
    started = time.monotonic()
    found: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.runs):
            found += one_run(seed, args.users, Path(tmp))
    z = np.array([x for x, _ in found])
    consistent = sum(1 for _, v in found if v == "consistent")
    n = len(found)
    share = float(np.mean(np.abs(z) < 1.96))
    se = math.sqrt(share * (1 - share) / n)
    print(f"runs {args.runs}, users {args.users}, directions with a z {n}")
    print(f"mean z {z.mean():+.3f} (sd {z.std(ddof=1):.3f}); |z| < 1.96 in {share:.1%} ± {se:.1%}")
    print(f"consistent at alpha 0.05: {consistent} of {n} ({consistent / n:.1%})")
    print(f"took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
