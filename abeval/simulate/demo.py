"""The data side of ``abeval demo``: the demo experiment, the history of
experiments (:mod:`abeval.simulate.series`) and the untested candidate, written as
files.

The command (:mod:`abeval.walkthrough`, through the public API) runs, in order:

1. :func:`write_demo_experiment`: the demo experiment ``home-reco-v2``, ingested
   with its control recorded (its report is the command's output);
2. :func:`write_demo_series`: the history, each experiment's log ingested and its
   control recorded; the held-out files stay in ``<out_dir>/series/<experiment>/``
   for ``abeval evaluate``;
3. :func:`write_demo_candidate`: the candidate the demo forecasts.

Every experiment is recorded with its target policy's exact probabilities
(``abeval experiment set X --target-propensities FILE``): the simulated
policies are Plackett–Luce samplers whose probability of each logged (item,
position) is known, so the off-policy estimates of the report and of ``abeval
agreement`` are predictions, with no flag (docs/metrics.md#simulated-history).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from abeval.simulate.config import SimulationConfig
from abeval.simulate.events import simulate_with_target
from abeval.simulate.series import (
    EVENTS_FILE,
    TARGET_FILE,
    ExperimentFiles,
    SeriesConfig,
    write_series,
)
from abeval.simulate.writers import labels_of, needs_quotes, write_events

#: Where the history goes, under the demo's folder.
SERIES_FOLDER = "series"


def demo_config(users: int, seed: int) -> SimulationConfig:
    """The demo experiment: a ranking change worth shipping, +8% CTR and +4%
    purchases per click."""
    return SimulationConfig(
        users=users,
        seed=seed,
        true_ctr_lift={"treatment": 0.08},
        true_conversion_lift={"treatment": 0.04},
    )


def demo_series_config(seed: int) -> SeriesConfig:
    """The demo's history: the series' defaults (12 experiments) with the demo's seed."""
    return SeriesConfig(seed=seed)


def write_demo_experiment(config: SimulationConfig, out_dir: Path) -> Path:
    """Simulate the demo experiment into ``out_dir/events.parquet`` and its target
    probabilities (each arm's for the other's requests) into
    ``out_dir/target_propensities.parquet``, the names the history's folders use."""
    events = out_dir / EVENTS_FILE
    table, target = simulate_with_target(config)
    write_events(table, events, quote=needs_quotes(labels_of(config)))
    write_events(target, out_dir / TARGET_FILE, quote=False)
    return events


def write_demo_series(out_dir: Path, seed: int) -> list[ExperimentFiles]:
    """Write the history's files into ``out_dir/series/<experiment>/``."""
    return write_series(out_dir / SERIES_FOLDER, demo_series_config(seed))


#: The candidate the demo forecasts: a treatment the history has not tested,
#: with this true relative CTR lift (known to the simulator, not to the forecast).
CANDIDATE_CTR_LIFT = 0.045
CANDIDATE_FOLDER = "candidate"


@dataclass(frozen=True)
class Candidate:
    """The untested candidate's held-out files and its true CTR lift."""

    truth: Path
    control: Path
    candidate: Path
    true_ctr_lift: float


def write_demo_candidate(out_dir: Path, seed: int) -> Candidate:
    """Held-out truth and ranked lists of production (``control.csv``) and of a
    new candidate (``candidate.csv``) of true CTR lift :data:`CANDIDATE_CTR_LIFT`,
    from the history's model, into ``out_dir/candidate/``."""
    from dataclasses import replace

    from abeval.simulate.series import ARMS, heldout

    s = demo_series_config(seed)
    config = replace(
        s.base,
        experiment="candidate",
        arms=ARMS,
        seed=s.seed * 1_000 + 999,
        true_ctr_lift={"treatment": CANDIDATE_CTR_LIFT},
        popularity_tilt={"control": s.control_tilt, "treatment": s.control_tilt},
    )
    truth, lists = heldout(config, s.heldout_users)
    folder = out_dir / CANDIDATE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    paths = Candidate(
        folder / "truth.csv", folder / "control.csv", folder / "candidate.csv", CANDIDATE_CTR_LIFT
    )
    write_events(truth, paths.truth, quote=False)
    write_events(lists["control"], paths.control, quote=False)
    write_events(lists["treatment"], paths.candidate, quote=False)
    return paths
