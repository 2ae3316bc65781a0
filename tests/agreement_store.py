"""A small history of experiments for the agreement board's tests.

Four simulated experiments (abeval.simulate, small) whose treatment has a known
CTR lift, with propensities and the target's exact probabilities recorded with
each (off-policy estimates) and ranked lists (replay);
a recorded evaluation for three of them whose ndcg@10 lift is half the true CTR
lift (``RECORDED``); and one experiment, ``bare``, whose events name no request,
item or propensity, so that it has no offline signal at all.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from abeval.analysis.ope_file import target_file
from abeval.simulate import SimulationConfig, simulate_with_target, write_events
from abeval.store import open_store
from abeval.store.evaluations import RecordedEvaluation, RecordedMetric, record_evaluation
from abeval.store.experiments import set_settings
from abeval.store.ingest import ingest_file

#: experiment -> true relative CTR lift of its treatment arm.
LIFTS = {"exp-a": -0.15, "exp-b": 0.0, "exp-c": 0.12, "exp-d": 0.25}
#: experiment -> (control's recorded ndcg@10, paired difference, its standard error).
RECORDED = {
    "exp-a": (0.20, -0.015, 0.004),
    "exp-b": (0.20, 0.002, 0.004),
    "exp-d": (0.20, 0.025, 0.004),
}
BARE = "bare"


def simulate_experiment(path: Path, name: str, lift: float, seed: int, users: int) -> Path:
    config = SimulationConfig(
        experiment=name,
        users=users,
        seed=seed,
        days=4,
        pre_period_days=0,
        segments={},
        true_ctr_lift={"treatment": lift},
        true_conversion_lift={"treatment": 0.0},
    )
    events, target = simulate_with_target(config)
    write_events(events, path)
    write_events(target, targets_of(path), quote=False)
    return path


def simulate_interleaved_run(
    path: Path, name: str, lift: float, seed: int, users: int, days: int = 4
) -> Path:
    """A team-draft interleaved run ``name`` of two rankers whose CTRs differ by
    ``lift`` (the same user model as :func:`simulate_experiment`), written to ``path``."""
    from abeval.simulate.interleaved import simulate_interleaved

    config = SimulationConfig(
        experiment=name,
        users=users,
        seed=seed,
        days=days,
        pre_period_days=0,
        segments={},
        true_ctr_lift={"treatment": lift},
        true_conversion_lift={"treatment": 0.0},
    )
    write_events(simulate_interleaved(config), path)
    return path


def targets_of(events: Path) -> Path:
    """Where :func:`simulate_experiment` writes the target's probabilities."""
    return events.with_name(f"{events.stem}.target.csv")


def write_bare(path: Path, names: Sequence[str] = (BARE,)) -> Path:
    """Two arms, exposures and purchases only: no impression to replay or reweight
    (one such experiment per name of ``names``)."""
    start = datetime(2025, 1, 6, 9, tzinfo=UTC)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["experiment", "arm", "user_id", "ts", "event_type", "value"])
        for name in names:
            for u in range(40):
                arm = "control" if u % 2 else "treatment"
                t = start + timedelta(minutes=u)
                out.writerow([name, arm, f"b{u}", t.isoformat(), "exposure", ""])
                if u % 3 == 0:
                    later = (t + timedelta(seconds=9)).isoformat()
                    out.writerow([name, arm, f"b{u}", later, "purchase", 10 + u])
    return path


def evaluation(name: str) -> RecordedEvaluation:
    base, diff, se = RECORDED[name]
    return RecordedEvaluation(
        experiment=name,
        recorded_at=datetime(2025, 2, 1, 12),
        conventions={"gain": "linear"},
        fingerprints={"truth": f"t-{name}", "control": "c", "treatment": "t"},
        metrics=(
            RecordedMetric("control", "ndcg@10", base, 0.003, 500),
            RecordedMetric(
                "treatment", "ndcg@10", base + diff, 0.003, 500, "control",
                diff, se, diff - 1.96 * se, diff + 1.96 * se, 500,
            ),
        ),
    )  # fmt: skip


def build_store(workdir: Path, db: str | None = None, users: int = 1500) -> str:
    """Simulate (``users`` per experiment), ingest and record the history into
    ``db`` (default: a DuckDB file in ``workdir``); return the store's path or URL."""
    db = db or str(workdir / "history.duckdb")
    files = [
        simulate_experiment(workdir / f"{name}.csv", name, lift, seed, users)
        for seed, (name, lift) in enumerate(LIFTS.items(), start=11)
    ]
    files.append(write_bare(workdir / "bare.csv"))
    with open_store(db) as store:
        for f in files:
            ingest_file(store, f)
        for f, name in zip(files, LIFTS, strict=False):
            set_settings(store, name, None, None, targets=target_file(targets_of(f)))
        for name in RECORDED:
            record_evaluation(store, evaluation(name))
    return db
