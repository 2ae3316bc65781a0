"""The agreement board's options and frozen results: one :class:`AgreementPair` per
experiment × treatment arm × primary online metric × offline signal, one
:class:`SignalSummary` per signal and online metric, what each experiment
contributed (:class:`ExperimentCoverage`), the backtests, and the whole
:class:`AgreementBoard` that ``abeval agreement --format json`` prints
(``reports/agreement.schema.json``). The board is built by
:mod:`abeval.analysis.agreement_board`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from abeval.analysis.online_metrics import BUILTIN_CATALOG, DEFAULT_PRIMARY, Catalog
from abeval.stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED
from abeval.stats.agreement_predictive import Backtest
from abeval.stats.results import NOT_IN_JSON, JsonResult

SCHEMA_VERSION = "1.1"


SignalSource = Literal["evaluation", "replay", "ope", "history", "interleaving"]


SOURCES: tuple[SignalSource, ...] = ("evaluation", "ope", "interleaving", "history", "replay")


#: How the board ranks signals (docs/metrics.md#agreement-ranking).
RANKING = (
    "independent signals (recorded evaluations, off-policy estimates) before replayed ones; "
    "then by the leave-one-experiment-out predictive score of the forecast model against an "
    "intercept-only model (largest gain in log score first; a signal too short to score "
    "counts as no gain), then the family-wise p-value, Spearman, and experiments covered"
)


@dataclass(frozen=True)
class AgreementOptions:
    """What ``abeval agreement`` lets a user choose. ``experiments``: None for all
    of the store's; ``alpha``: the report's level and the intervals' (1 − α)."""

    experiments: tuple[str, ...] | None = None
    alpha: float = 0.05
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    primary: tuple[str, ...] = DEFAULT_PRIMARY
    #: experiment -> a file of the target's probabilities for its off-policy
    #: estimates (``--target-propensities``); the others use the empirical ones.
    target_propensities: Mapping[str, str] = field(default_factory=dict)
    #: ``--backtest``: forecast each experiment from the earlier ones.
    backtest: bool = False
    #: ``--primary`` was given: it overrides each experiment's recorded primary
    #: metrics (and a history file otherwise keeps all its metrics).
    primary_given: bool = False
    #: ``--alpha`` was given: it overrides each experiment's recorded α.
    alpha_given: bool = False


@dataclass(frozen=True)
class AgreementPair(JsonResult):
    """One experiment × treatment arm × primary online metric × offline signal:
    relative lifts against the control with their 1 − α intervals. The online
    interval is the report's (adjusted over primary metrics × arms);
    ``offline_lift`` is None (with ``offline_status``) when the signal gave none."""

    experiment: str
    arm: str
    online_metric: str
    online_lift: float
    online_ci: tuple[float, float] | None
    online_se: float | None
    signal: str
    source: SignalSource
    offline_lift: float | None
    offline_ci: tuple[float, float] | None
    offline_status: str = "ok"
    #: False for replayed metrics and post-hoc off-policy estimates.
    independent: bool = True
    #: The offline lift's standard error: the estimator's own for an off-policy
    #: estimate, else read off ``offline_ci`` as a normal interval at its level
    #: (:func:`abeval.analysis.agreement_pairs.interval_se`); None without one.
    offline_se: float | None = None
    #: (offline − online) / √(se² + se²) where both are the same quantity, else None.
    z: float | None = None


@dataclass(frozen=True)
class SignalSummary(JsonResult):
    """One signal against one primary online metric over the experiments
    (docs/metrics.md#agreement-across-experiments). ``rank`` is 1 for the signal
    that predicts the online metric best (:data:`RANKING`); ``independent`` is
    False for replayed metrics (same clicks as the online metrics)."""

    rank: int
    signal: str
    source: SignalSource
    online_metric: str
    independent: bool
    offline_lower_is_better: bool
    experiments: int
    pairs: int
    sign_agreement: float | None
    agreeing_pairs: int
    both_significant: int
    both_significant_agreeing: int
    spearman: float | None
    spearman_ci: tuple[float, float] | None
    spearman_p: float | None
    kendall: float | None
    kendall_ci: tuple[float, float] | None
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    slope: float | None
    slope_se: float | None
    slope_ci: tuple[float, float] | None
    intercept: float | None
    tau2: float | None
    precision: float | None
    false_negative_rate: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    status: str
    message: str
    reliability: float | None = None
    ceiling: float | None = None
    ceiling_status: str = "too_few_points"
    rho_over_ceiling: float | None = None
    expected_precision: float | None = None
    familywise_p: float | None = None
    log_score: float | None = None
    baseline_log_score: float | None = None
    predictive_gain: float | None = None
    scored: int = 0
    model_slope: float | None = None
    model_slope_ci: tuple[float, float] | None = None
    model_intercept: float | None = None
    model_tau: float | None = None
    model_experiments: int = 0
    #: Pairs with a z (the signal predicts the online metric itself), their mean z
    #: and the share with |z| < 1.96 (:func:`with_z_scores`).
    z_pairs: int = 0
    z_mean: float | None = None
    z_within: float | None = None


#: What put the best signal first: the first of the ranking's criteria that is
#: defined for it (docs/metrics.md#agreement-ranking).
Criterion = Literal["predictive_gain", "familywise_p", "spearman"]

#: ``ok``: an independent signal with a correlation; ``not_independent``: only
#: replayed or post-hoc signals (same clicks as the online metric);
#: ``too_few_experiments``: the best has fewer than 3 experiments (no ρ);
#: ``no_signals``: the metric has no signal at all.
BestStatus = Literal["ok", "not_independent", "too_few_experiments", "no_signals"]


@dataclass(frozen=True)
class BestSignal(JsonResult):
    """The board's best predictor of one online metric: its best-ranked row with a
    Spearman correlation (``row``; the rank-1 row when none has one, None without
    signals), the criterion that ranked it first, and how many more experiments
    the board needs for a correlation (``too_few_experiments``) or, once it has
    one, for the leave-one-experiment-out gain (0 when it has it)."""

    online_metric: str
    status: BestStatus
    signal: str | None
    source: SignalSource | None
    criterion: Criterion | None
    experiments: int
    more_experiments_needed: int
    row: SignalSummary | None = field(default=None, repr=False, metadata=NOT_IN_JSON)


@dataclass(frozen=True)
class NoiseSignal(JsonResult):
    """A signal whose agreement unrelated lifts would show as often as α or more
    (family-wise p ≥ α, or no p: too few experiments)."""

    signal: str
    source: SignalSource
    independent: bool
    familywise_p: float | None


@dataclass(frozen=True)
class BoardHeadline(JsonResult):
    """The board's answer for one online metric: the best signal and its numbers
    (Spearman ρ with its interval, ρ over the noise ceiling, the calibration
    slope with its interval, the family-wise p), and the signals indistinguishable
    from noise at the board's α."""

    online_metric: str
    status: BestStatus
    best_signal: str | None
    best_source: SignalSource | None
    criterion: Criterion | None
    predictive_gain: float | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None
    ceiling: float | None
    ceiling_status: str | None
    rho_over_ceiling: float | None
    slope: float | None
    slope_ci: tuple[float, float] | None
    familywise_p: float | None
    experiments: int
    more_experiments_needed: int
    alpha: float
    noise_signals: tuple[NoiseSignal, ...]
    signals: int


@dataclass(frozen=True)
class ExperimentCoverage(JsonResult):
    """What one experiment contributed: ``status`` ``ok`` (it has offline
    signals), ``no_signals`` (none: no replay, propensities or recorded
    evaluation) or ``skipped`` (it could not be analysed; ``message`` says why)."""

    experiment: str
    control: str | None
    treatments: tuple[str, ...]
    signals: dict[str, int]  # source -> signals found
    status: Literal["ok", "no_signals", "skipped"]
    message: str
    #: The α of its online and replayed intervals: the board's ``--alpha`` when
    #: given, else its recorded α, else the board's (None when skipped).
    alpha: float | None = None


@dataclass(frozen=True)
class AgreementBoard(JsonResult):
    """The whole board: what ``--format json`` prints
    (docs/usage.md#which-offline-signal-predicts-the-online-lift)."""

    schema_version: str
    abeval_version: str
    generated_at: str
    store: str
    alpha: float
    seed: int
    resamples: int
    ranking: str
    #: The board's answer per online metric (:mod:`abeval.analysis.agreement_headline`).
    headlines: tuple[BoardHeadline, ...]
    experiments: tuple[ExperimentCoverage, ...]
    experiments_with_signals: int
    experiments_without_signals: tuple[str, ...]
    experiments_skipped: tuple[str, ...]
    pairs: tuple[AgreementPair, ...]
    summary: tuple[SignalSummary, ...]
    notes: tuple[str, ...]
    #: ``--backtest``: per signal and online metric, each experiment forecast
    #: from the earlier ones (empty unless asked for).
    backtest: tuple[SignalBacktest, ...] = ()
    #: The store's metrics the board was read with (their labels and directions, for
    #: its presenters; not in the JSON document).
    catalog: Catalog = field(
        default=BUILTIN_CATALOG, repr=False, compare=False, metadata=NOT_IN_JSON
    )


@dataclass(frozen=True)
class SignalBacktest(JsonResult):
    """The backtest of one signal against one online metric: experiments in the
    order of ``ordered_by`` (``start`` of the experiment, or the history's
    ``date``, or ``row`` order when a date is missing)."""

    signal: str
    source: SignalSource
    online_metric: str
    ordered_by: str
    result: Backtest
