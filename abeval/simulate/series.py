"""A history of experiments whose offline-to-online relation is known.

:func:`series` lays out ``experiments`` two-arm experiments (control against
one treatment), each a :class:`~abeval.simulate.SimulationConfig` of the model
in :mod:`abeval.simulate`; :func:`write_series` writes, per experiment, the
files a team would have (docs/metrics.md#simulated-history):

- ``events.parquet``: the event log with logging propensities (``abeval
  ingest``; Parquet keeps the demo's files small, and ingest reads CSV alike);
- ``target_propensities.parquet``: for every impression of the control's users
  from their exposure on, the treatment policy's exact probability of showing
  that item at that position given the request's candidates and their
  relevance, and for the treatment's impressions the control's
  (``abeval report --target-propensities``: both directions of the
  off-policy estimate then use the true probabilities);
- ``truth.csv`` (``user_id``, ``item_id``, ``relevance``) and one
  recommendation file per arm, ``control.csv`` and ``treatment.csv``
  (``user_id``, ``item_id``, ``rank``): held-out users, one request each, drawn
  from the same model; each arm's policy ranks the same candidates and the top
  ``list_length`` are written (``abeval evaluate``). Files are named after the
  arms, so ``evaluate`` names the models after them.

Two knobs per treatment, set independently of each other:

- **quality**, its true CTR lift (spread evenly over ``lift_range``, in a
  seeded order), turned exactly into the Plackett–Luce relevance weight by the
  simulator. The same weight ranks the held-out candidates, so the expected
  offline NDCG lift (:attr:`SeriesExperiment.expected_ndcg`, exact) increases
  with the quality.
- **popularity tilt** τ (evenly over ``tilt_range``; the control has
  ``control_tilt``): the probability that a request's irrelevant candidates are
  ordered by popularity instead of at random. It changes which items fill the
  irrelevant slots, hence coverage, novelty and the like, but not clicks:
  the Plackett–Luce draw over relevance decides which slots hold a relevant
  item before the tilt acts, and a click depends only on the user, the
  position and the relevance of what is there (docs/metrics.md#simulated-history).
  Tilts are assigned to experiments by the first seeded permutation whose rank
  correlation with the qualities is at most ``0.05`` in size, so a tilt-driven
  signal has (near) zero rank correlation with the online lift by design.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from abeval.simulate.columns import strings
from abeval.simulate.config import SimulationConfig
from abeval.simulate.effects import binomial_pmf, relevant_at_position
from abeval.simulate.events import draw_pools, order_pools, simulate_with_target
from abeval.simulate.model import model_of
from abeval.simulate.writers import labels_of, needs_quotes, write_events

ARMS = ("control", "treatment")
#: Largest rank correlation (in size) allowed between the qualities and the tilts.
MAX_KNOB_CORRELATION = 0.05


def _base() -> SimulationConfig:
    return SimulationConfig(
        arms=ARMS,
        users=1_500,
        requests_per_user=5.0,
        pre_period_days=7,
        candidates=20,
        catalogue=1_000,
        user_propensity_concentration=10.0,
        true_conversion_lift={"treatment": 0.0},
    )


@dataclass(frozen=True)
class SeriesConfig:
    """What history to simulate (module docstring)."""

    experiments: int = 12
    seed: int = 0
    #: Smallest and largest true CTR lift of a treatment.
    lift_range: tuple[float, float] = (-0.08, 0.10)
    #: Smallest and largest popularity tilt of a treatment.
    tilt_range: tuple[float, float] = (0.0, 0.8)
    control_tilt: float = 0.4
    #: Held-out users per experiment (one request each) for the offline files.
    heldout_users: int = 2_000
    prefix: str = "series"
    start: datetime = datetime(2025, 1, 6, tzinfo=UTC)
    #: Days from one experiment's start to the next one's.
    every_days: int = 14
    #: Everything else (users per experiment, sizes, click model); the arms,
    #: lifts, tilts, experiment name, seed and start are set per experiment.
    base: SimulationConfig = field(default_factory=_base)

    def __post_init__(self) -> None:
        if self.experiments < 1:
            raise ValueError("experiments must be >= 1")
        if self.heldout_users < 1:
            raise ValueError("heldout_users must be >= 1")
        if not self.lift_range[0] <= self.lift_range[1]:
            raise ValueError("lift_range must be (low, high)")
        if not 0 <= self.tilt_range[0] <= self.tilt_range[1] < 1 or not 0 <= self.control_tilt < 1:
            raise ValueError("tilts must be in [0, 1), tilt_range as (low, high)")


@dataclass(frozen=True)
class SeriesExperiment:
    """One experiment of the series and its truth."""

    name: str
    config: SimulationConfig
    #: The treatment's true relative CTR lift (the online truth).
    ctr_lift: float
    #: The treatment's popularity tilt (the control's is the series' ``control_tilt``).
    tilt: float
    #: Exact expected NDCG@list_length per arm over held-out users with a relevant item.
    expected_ndcg: dict[str, float]

    @property
    def expected_ndcg_lift(self) -> float:
        return self.expected_ndcg["treatment"] / self.expected_ndcg["control"] - 1.0


@dataclass(frozen=True)
class ExperimentFiles:
    """Where :func:`write_series` put one experiment's files."""

    experiment: SeriesExperiment
    events: Path
    target_propensities: Path
    truth: Path
    recommendations: dict[str, Path]  # arm -> file


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.size < 2:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _knobs(s: SeriesConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per experiment, the quality (true CTR lift) and the tilt (module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence(s.seed, spawn_key=(7,)))
    n = s.experiments
    lifts = rng.permutation(np.linspace(*s.lift_range, n))
    levels = np.linspace(*s.tilt_range, n)
    best, best_rho = levels, math.inf
    for _ in range(1_000):
        tilts = rng.permutation(levels)
        rho = abs(_spearman(lifts, tilts)) if n > 2 else 0.0
        if rho < best_rho:
            best, best_rho = tilts, rho
        if rho <= MAX_KNOB_CORRELATION:
            break
    return lifts, best


def expected_ndcg(config: SimulationConfig, weight: float) -> float:
    """Exact E[NDCG@list_length] of a policy with relevance weight ``weight`` over
    held-out users with at least one relevant candidate (binary relevance; the
    relevant candidates are the truth): ``Σ_R P(R | R ≥ 1) Σ_k q_k(R) / log2(k + 1)
    / IDCG(R)``, ``IDCG(R) = Σ_{k ≤ min(R, L)} 1 / log2(k + 1)``."""
    n, shown = config.pool, config.list_length
    q = relevant_at_position(n, weight)[:, :shown]
    discount = 1.0 / np.log2(np.arange(2, shown + 2, dtype=np.float64))
    pmf = binomial_pmf(n, config.relevant_share)
    ideal = np.array([discount[: min(r, shown)].sum() for r in range(n + 1)])
    dcg = q @ discount
    ndcg = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
    return float((pmf[1:] * ndcg[1:]).sum() / pmf[1:].sum())


def series(s: SeriesConfig | None = None) -> list[SeriesExperiment]:
    """The experiments of the series and their truth (module docstring)."""
    s = s or SeriesConfig()
    lifts, tilts = _knobs(s)
    out = []
    for i, (lift, tilt) in enumerate(zip(lifts, tilts, strict=True)):
        name = f"{s.prefix}-{i + 1:02d}"
        config = replace(
            s.base,
            experiment=name,
            arms=ARMS,
            seed=s.seed * 1_000 + i,
            start=s.start + timedelta(days=i * s.every_days),
            true_ctr_lift={"treatment": float(lift)},
            popularity_tilt={"control": s.control_tilt, "treatment": float(tilt)},
        )
        weights = model_of(config).weights
        ndcg = {arm: expected_ndcg(config, float(w)) for arm, w in zip(ARMS, weights, strict=True)}
        out.append(SeriesExperiment(name, config, float(lift), float(tilt), ndcg))
    return out


def heldout(config: SimulationConfig, users: int) -> tuple[pa.Table, dict[str, pa.Table]]:
    """The truth and each arm's ranked lists for ``users`` held-out users (one
    request each, from the experiment's model; seeded by the experiment's seed)."""
    model = model_of(config)
    rng = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(1 << 29,)))
    pools = draw_pools(rng, model, users)
    user_ids = strings("h", np.arange(users))
    rows, cols = np.nonzero(pools.relevant)
    truth = pa.table(
        {
            "user_id": user_ids.take(pa.array(rows)),
            "item_id": model.item_ids.take(pa.array(pools.items[rows, cols])),
            "relevance": pa.array(np.ones(rows.size, dtype=np.int32)),
        }
    )
    lists = {}
    shown = config.list_length
    for index, arm in enumerate(config.arms):
        order = order_pools(rng, model, pools, np.full(users, index))
        items = np.take_along_axis(pools.items, order, axis=1)
        lists[arm] = pa.table(
            {
                "user_id": user_ids.take(pa.array(np.repeat(np.arange(users), shown))),
                "item_id": model.item_ids.take(pa.array(items.ravel())),
                "rank": pa.array(np.tile(np.arange(1, shown + 1, dtype=np.int32), users)),
            }
        )
    return truth, lists


#: Each experiment's event log and its target probabilities, in its folder.
EVENTS_FILE = "events.parquet"
TARGET_FILE = "target_propensities.parquet"


def write_experiment(
    experiment: SeriesExperiment, directory: str | Path, heldout_users: int
) -> ExperimentFiles:
    """Write one experiment's files into ``directory`` (module docstring)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    events, target = simulate_with_target(experiment.config)
    files = ExperimentFiles(
        experiment,
        directory / EVENTS_FILE,
        directory / TARGET_FILE,
        directory / "truth.csv",
        {arm: directory / f"{arm}.csv" for arm in experiment.config.arms},
    )
    c = experiment.config
    # the simulator's ids never need quotes; the configured labels may
    quote = needs_quotes(labels_of(c))
    write_events(events, files.events, quote=quote)
    write_events(target, files.target_propensities, quote=False)
    truth, lists = heldout(c, heldout_users)
    write_events(truth, files.truth, quote=False)
    for arm, table in lists.items():
        write_events(table, files.recommendations[arm], quote=False)
    return files


#: The history's interleaved runs (:func:`write_interleaved`), in the history's folder.
INTERLEAVED_FILE = "interleaved.parquet"


def interleaved_config(experiment: SeriesExperiment, users: int) -> SimulationConfig:
    """The team-draft interleaved run of ``experiment``'s two rankers: the same user
    model, candidates, position bias and rankers (production is ``control``, the
    candidate ``treatment``), ``users`` fresh users (their own seed), named
    ``<experiment>-interleaved``."""
    c = experiment.config
    return replace(c, experiment=f"{c.experiment}-interleaved", users=users, seed=c.seed + 500)


def write_interleaved(
    experiments: Sequence[SeriesExperiment], directory: str | Path, users: int
) -> Path:
    """Write the interleaved run of each of ``experiments`` (:func:`interleaved_config`)
    into one file, ``directory/interleaved.parquet`` (its ``experiment`` column names
    each run): their events, every impression naming its team
    (:func:`abeval.simulate.interleaved.simulate_interleaved`)."""
    from abeval.simulate.interleaved import simulate_interleaved

    path = Path(directory) / INTERLEAVED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = [simulate_interleaved(interleaved_config(e, users)) for e in experiments]
    write_events(pa.concat_tables(runs), path, quote=False)
    return path


def write_series(directory: str | Path, s: SeriesConfig | None = None) -> list[ExperimentFiles]:
    """Write every experiment of the series, each into its own folder
    ``directory/<experiment>``."""
    s = s or SeriesConfig()
    return [write_experiment(e, Path(directory) / e.name, s.heldout_users) for e in series(s)]
