"""A small store of the demo's shape for docs/notebook.ipynb (tests/api/test_notebook.py):
``demo/demo.duckdb`` with the demo experiment ``home-reco-v2`` (1,000 users) and a
history of four experiments (300 users each), each recorded with its control arm,
its target probabilities and its held-out evaluation, and the untested
candidate's held-out files in ``demo/candidate/``, as ``abeval demo`` writes them
(abeval.walkthrough), only smaller.

``python tests/notebook_store.py FOLDER`` writes it into ``FOLDER/demo``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import abeval
from abeval.simulate.demo import (
    TARGET_FILE,
    demo_config,
    write_demo_candidate,
    write_demo_experiment,
)
from abeval.simulate.series import SeriesConfig, write_series

SEED = 7


def build_small_demo(folder: Path) -> Path:
    """``folder/demo``, written as described above; the folder returned."""
    demo = folder / "demo"
    demo.mkdir(parents=True, exist_ok=True)
    config = demo_config(1_000, SEED)
    events = write_demo_experiment(config, demo)
    series = SeriesConfig(
        experiments=4, seed=SEED, heldout_users=300, base=replace(SeriesConfig().base, users=300)
    )
    history = write_series(demo / "series", series)
    db = demo / "demo.duckdb"
    with abeval.open(db) as store:
        store.ingest(events)
        store.set(config.experiment, control=config.control, target_propensities=demo / TARGET_FILE)
        for f in history:
            store.ingest(f.events)
            name = f.experiment.name
            store.set(
                name, control=f.experiment.config.control, target_propensities=f.target_propensities
            )
    for f in history:
        abeval.evaluate(f.truth, dict(f.recommendations), experiment=f.experiment.name, db=db)
    write_demo_candidate(demo, SEED)
    return demo


if __name__ == "__main__":
    print(build_small_demo(Path(sys.argv[1])))
