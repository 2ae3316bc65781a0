"""The experiment report as frozen dataclasses: the one thing every presenter
(JSON, text, HTML) reads, and the :class:`ReportOptions` it is built under.
Nothing here computes statistics; ``to_dict()`` gives the public JSON document
described by ``reports/report.schema.json``.

Numbers are finite floats or ``None``; where a value is undefined the object
carries a ``status`` and a ``message``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from abeval.analysis.history_prior import LearnedPrior, PriorChoice
from abeval.analysis.interleaving import InterleavingSection
from abeval.analysis.online_metrics import (
    BUILTIN_CATALOG,
    DEFAULT_GUARDRAILS,
    DEFAULT_PRIMARY,
    Catalog,
)
from abeval.analysis.ope import OpeOptions, OpeSection
from abeval.analysis.predicted import PredictedSection
from abeval.choices import DecisionName
from abeval.stats.results import (
    NOT_IN_JSON,
    BayesianResult,
    Comparison,
    JsonResult,
    PowerResult,
    RelativeInterval,
    SrmResult,
)
from abeval.stats.sequential import DEFAULT_TUNING_N

SCHEMA_VERSION = "2.2"
#: ``offline_status`` when the replay was not asked for (``offline=False``).
OFFLINE_NOT_REQUESTED = "not_requested"

Role = Literal["primary", "secondary", "guardrail"]
Verdict = DecisionName
# How the control arm was chosen (docs/metrics.md#control-arm).
ControlRule = Literal["option", "recorded", "named_control"]


@dataclass(frozen=True)
class PlanRecord(JsonResult):
    """When the plan (``plan_users``, ``plan_days``) was recorded and what the store
    held of the experiment then (:mod:`abeval.store.data_stamp`): the time (naive
    UTC, ISO), the last event, the days from the first exposure and the users
    exposed. ``after_data``: the data had already reached every recorded part of
    the plan, so it was made after the result could be seen."""

    recorded_at: str
    data_until: str | None
    days: int
    users: int
    plan_users: int | None
    plan_days: int | None
    after_data: bool


@dataclass(frozen=True)
class ReportOptions:
    """What ``abeval report`` lets a user choose."""

    control: str | None = None
    alpha: float = 0.05
    correction: str = "holm"
    relative_interval: RelativeInterval = "fieller"
    sequential: bool = False
    tuning_n: float = DEFAULT_TUNING_N
    cuped_days: int = 14
    segment: str | None = None
    primary: tuple[str, ...] = DEFAULT_PRIMARY
    guardrails: tuple[str, ...] = DEFAULT_GUARDRAILS
    target_mde: float = 0.02
    power: float = 0.8
    offline_ks: tuple[int, ...] = (5, 10)
    daily: bool = True
    offline: bool = True
    # The analysis window (docs/metrics.md#analysis-window), naive UTC; None: the
    # recorded bound, else open.
    window_from: datetime | None = None
    window_to: datetime | None = None
    # (metric, quantile) pairs of --cap (docs/metrics.md#outlier-capping).
    caps: tuple[tuple[str, float], ...] = ()
    ope: OpeOptions = field(default_factory=OpeOptions)
    # The saved configuration (docs/usage.md#saved-configuration): guardrail margins
    # (metric, largest relative harm allowed), the secondary metrics (None: all
    # others), the planned horizon (total users, days), and where each recordable
    # setting came from ("flag", "record", "default"; empty: as given here).
    margins: tuple[tuple[str, float], ...] = ()
    secondary: tuple[str, ...] | None = None
    plan_users: int | None = None
    plan_days: int | None = None
    sources: tuple[tuple[str, str], ...] = ()
    # The settings given as flags for this run; None: the record is not read.
    flags: frozenset[str] | None = None
    # When the recorded plan was recorded, on what data (None: no recorded plan read).
    plan_recorded: PlanRecord | None = None
    # The Bayesian view's prior (--prior) and, under history, each metric's learned one.
    prior: PriorChoice = "flat"
    priors: tuple[LearnedPrior, ...] = ()

    def margin(self, metric: str) -> float | None:
        return dict(self.margins).get(metric)


@dataclass(frozen=True)
class Settings(JsonResult):
    """How the report was computed."""

    control: str
    control_rule: ControlRule
    alpha: float
    correction: str
    method: str  # "fixed" or "sequential"
    tuning_n: float | None
    cuped_days: int
    primary: tuple[str, ...]
    guardrails: tuple[str, ...]
    segment: str | None
    target_mde: float
    power: float
    unit: str = "user"
    relative_interval: RelativeInterval = "fieller"
    window_from: str | None = None
    window_to: str | None = None
    window_rule: str | None = None  # "option", "recorded", "option and recorded"
    caps: dict[str, float] = field(default_factory=dict)
    # The saved configuration (docs/usage.md#saved-configuration): where each
    # setting came from ("flag", "record" or "default"), the guardrails' margins,
    # the secondary metrics (None: every other metric), the planned horizon, and
    # the α power and MDE are planned at (docs/metrics.md#power-and-mde).
    sources: dict[str, str] = field(default_factory=dict)
    margins: dict[str, float] = field(default_factory=dict)
    secondary: tuple[str, ...] | None = None
    plan_users: int | None = None
    plan_days: int | None = None
    planning_alpha: float | None = None
    planning_rule: str | None = None
    plan_recorded: PlanRecord | None = None
    prior: PriorChoice = "flat"  # the Bayesian view's (docs/metrics.md, learned prior)
    priors: tuple[LearnedPrior, ...] = ()


@dataclass(frozen=True)
class ArmInfo(JsonResult):
    arm: str
    users: int
    is_control: bool
    expected_share: float


@dataclass(frozen=True)
class ArmValue(JsonResult):
    """One arm's value of a metric with its raw numerator and denominator."""

    value: float | None
    numerator: float
    denominator: float
    users: int


#: Which interval a metric is shown and judged with (docs/metrics.md#decision): the
#: always-valid one (a confidence sequence) or the fixed-horizon one.
IntervalBasis = Literal["group_sequential", "always_valid", "fixed_horizon"]


@dataclass(frozen=True)
class OnlineMetricResult(JsonResult):
    """One metric, one treatment arm against control, under the decision's basis.

    ``comparison`` (and ``unadjusted``, ``bayesian``, ``significant``) are made
    under ``basis``, the interval the report's decision reads
    (:func:`abeval.analysis.basis.interval_basis`): every presenter shows and judges
    the metric by them. ``lift``, ``interval`` and ``p_value`` repeat the relative
    lift, its shown interval (corrected once adjusted) and its p-value (adjusted
    once adjusted) at the top of the JSON object; ``reference_fixed_horizon`` is
    the fixed-horizon comparison while the basis is always-valid, shown only as a
    reference. ``decided_day`` (group-sequential, no plan) is the day (1 = the first
    day) that reached the metric's expected size, when that is before today: the
    design spent its α there, so the comparison is that day's data and stays the
    decision, while ``reference_fixed_horizon`` is today's."""

    metric: str
    label: str
    kind: str
    role: Role
    arm: str
    basis: IntervalBasis = field(default="fixed_horizon", kw_only=True)
    decided_day: int | None = field(default=None, kw_only=True)
    lift: float | None = field(default=None, init=False)
    interval: tuple[float, float] | None = field(default=None, init=False)
    p_value: float | None = field(default=None, init=False)
    control: ArmValue
    treatment: ArmValue
    comparison: Comparison
    unadjusted: Comparison | None
    bayesian: BayesianResult
    significant: bool
    status: str
    message: str
    reference_fixed_horizon: Comparison | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        rel = self.comparison.relative
        object.__setattr__(self, "lift", rel.effect)
        object.__setattr__(self, "interval", rel.interval)
        object.__setattr__(
            self, "p_value", rel.p_adjusted if rel.p_adjusted is not None else rel.p_value
        )
        super().__post_init__()

    @property
    def lower_is_better(self) -> bool:
        """The metric's direction (a decrease is good), as the comparison was judged."""
        return self.bayesian.lower_is_better


@dataclass(frozen=True)
class VerdictResult(JsonResult):
    metric: str
    arm: str
    verdict: Verdict
    reason: str


Direction = Literal["better", "worse", "flat"]
GuardrailState = Literal["passed", "worse", "underpowered", "unchecked"]
# What the decision was judged on (docs/metrics.md#decision): always-valid intervals
# because --sequential was asked for, or because no plan is recorded; the
# fixed-horizon intervals once the recorded plan is reached; or nothing yet
# (keep_running) because the plan is not reached.
DecisionBasis = Literal[
    "sequential_requested", "sequential_no_plan", "fixed_plan_reached", "plan_not_reached"
]


@dataclass(frozen=True)
class PlanProgress(JsonResult):
    """How far the experiment is into its recorded plan (None where not planned)."""

    days: int
    users: int
    plan_days: int | None
    plan_users: int | None
    reached: bool
    # Once the plan is reached: the day of the planned look (the first day with
    # every part of the plan reached), whose data the decision reads from then on
    # (docs/metrics.md#decision); None while the latest day is that look.
    decided_day: int | None = None


@dataclass(frozen=True)
class DecisionInput(JsonResult):
    """One metric as the decision rule reads it (docs/metrics.md#decision):
    ``direction`` is ``better``/``worse`` when significant after correction,
    else ``flat`` (None when the comparison could not be made);
    ``within_target`` whether the relative interval lies inside ±target MDE;
    ``detectable`` the relative lift the test detects at the planned power."""

    metric: str
    role: Role
    status: str
    direction: Direction | None
    relative_effect: float | None
    interval: tuple[float, float] | None
    within_target: bool | None = None
    detectable: float | None = None
    # Guardrails (docs/metrics.md#guardrails): the margin (largest relative harm
    # allowed; None: none), the largest harm the interval still allows (its worse
    # end, as a relative change in the harmful direction), and the rule's reading:
    # "passed", "worse", "underpowered" (past the margin, not significantly worse)
    # or "unchecked" (the comparison could not be made).
    margin: float | None = None
    largest_harm: float | None = None
    guardrail: GuardrailState | None = None


@dataclass(frozen=True)
class Decision(JsonResult):
    """The overall decision for one treatment arm and the inputs of its rule."""

    arm: str
    decision: Verdict
    reason: str
    srm_flagged: bool
    target_mde: float
    primaries: tuple[DecisionInput, ...]
    guardrails: tuple[DecisionInput, ...]
    basis: DecisionBasis = "fixed_plan_reached"
    progress: PlanProgress | None = None


@dataclass(frozen=True)
class CapInfo(JsonResult):
    """One capped per-user variable: the metrics that read it, the pooled
    ``quantile``, the ``cap`` value (None when undefined) and the users above it."""

    variable: str
    metrics: tuple[str, ...]
    quantile: float
    cap: float | None
    users_capped: dict[str, int]
    users_capped_total: int
    #: The share of a lift that scales every user's value that the capped metric
    #: keeps (:func:`abeval.analysis.capping.lift_kept`); None when undefined.
    lift_kept: float | None = None


@dataclass(frozen=True)
class Health(JsonResult):
    srm: SrmResult
    users_seen: int
    users_analysed: int
    users_in_several_arms: int
    clicks_without_impression: int
    purchases_without_click: int
    duplicate_impressions: int
    events_outside_population: int
    events_before_exposure: int
    events: int
    first_ts: str | None
    last_ts: str | None
    problems: tuple[str, ...]
    events_outside_window: int = 0
    events_far_outside: int = 0
    events_unmapped: int = 0


@dataclass(frozen=True)
class DailyPoint(JsonResult):
    """One primary metric and arm at the end of one day: the cumulative lift (all
    activity of the users enrolled by then) and the lift of that day's activity
    alone (``day_*``: a novelty effect shows as a decaying day lift)."""

    day: str
    metric: str
    arm: str
    control_users: int
    treatment_users: int
    relative_lift: float | None
    ci: tuple[float, float] | None
    status: str
    day_lift: float | None = None
    day_ci: tuple[float, float] | None = None
    day_status: str = "empty_arm"
    # True on a series' last point, which is the metric's shown lift and interval
    # (abeval.analysis.basis.with_shown_end): CUPED where the tables use it, corrected.
    shown: bool = False


@dataclass(frozen=True)
class SegmentResult(JsonResult):
    segment: str
    value: str
    metric: str
    arm: str
    control_users: int
    treatment_users: int
    comparison: Comparison


@dataclass(frozen=True)
class PowerInfo(JsonResult):
    """What this test could detect and what a target effect would need."""

    metric: str
    arm: str
    detectable: PowerResult
    needed_for_target: PowerResult
    users_per_day: float | None
    more_days_needed: float | None
    feasible: bool = True  # False when more than a year more would be needed
    #: Under the default basis (no plan recorded: α spent over a look a day up to
    #: the users needed, :mod:`abeval.stats.spending_power`): the looks counted, the
    #: chance of crossing a boundary by the last of them with those users, and the
    #: users for which that chance is the planned power. None when a plan is
    #: recorded or the test is sequential (the fixed or sequential power holds).
    looks: int | None = None
    power_with_looks: float | None = None
    users_with_looks: int | None = None


@dataclass(frozen=True)
class GuardrailPower(JsonResult):
    """Whether a guardrail with a margin can be shown non-inferior: the users its
    margin needs at the planning α and power (``needed``), against the planned
    total (``planned``: the recorded plan, else what the primary metrics need for
    the target MDE; None when neither is known)."""

    metric: str
    arm: str
    margin: float
    needed: PowerResult
    planned_users: int | None
    planned_rule: str  # "plan" or "target_mde"
    enough: bool | None


@dataclass(frozen=True)
class OfflineResult(JsonResult):
    """An offline metric replayed from the logs, per arm, compared with control."""

    metric: str
    convention: dict[str, Any]
    arm: str
    control_value: float | None
    treatment_value: float | None
    control_users: int
    treatment_users: int
    comparison: Comparison
    agrees_with: str | None
    # Always None: replayed from the same clicks as CTR, so not independent evidence
    # (docs/metrics.md#log-replay); agreement is judged for off-policy estimates only.
    agreement: str | None
    lists_left_out: dict[str, int] = field(default_factory=dict)  # the treatment arm's
    control_lists_left_out: dict[str, int] = field(default_factory=dict)
    # True when every user of every arm has the same value, so no arm can differ
    # (recall@K once K reaches the list length): kept here, hidden on the pages with
    # ``constant_reason`` (docs/metrics.md#log-replay).
    constant: bool = False
    constant_reason: str = ""


@dataclass(frozen=True)
class OfflineValue(JsonResult):
    """A beyond-accuracy metric of one arm (coverage, Gini, entropy, novelty): a
    value over all of the arm's lists, with no per-user variance to test."""

    metric: str
    arm: str
    value: float | None
    convention: dict[str, Any]
    counts: dict[str, Any]
    status: str
    message: str


@dataclass(frozen=True)
class Methodology(JsonResult):
    sql: str
    sufficient_statistics: dict[str, Any]
    ingests: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class ExperimentReport(JsonResult):
    schema_version: str
    abeval_version: str
    generated_at: str
    experiment: str
    store: str
    decisions: tuple[Decision, ...]
    settings: Settings
    arms: tuple[ArmInfo, ...]
    health: Health
    caps: tuple[CapInfo, ...]
    verdicts: tuple[VerdictResult, ...]
    metrics: tuple[OnlineMetricResult, ...]
    daily: tuple[DailyPoint, ...]
    segments: tuple[SegmentResult, ...]
    segment_warning: str | None
    power: tuple[PowerInfo, ...]
    offline: tuple[OfflineResult, ...]
    offline_values: tuple[OfflineValue, ...]
    offline_status: str  # "ok", OFFLINE_NOT_REQUESTED, or why the replay could not run
    methodology: Methodology
    ope: OpeSection | None = None  # off-policy estimates (docs/metrics.md#off-policy-estimates)
    # lifts predicted by a recorded offline evaluation (docs/metrics.md#recorded-evaluations)
    predicted: PredictedSection | None = None
    guardrail_power: tuple[GuardrailPower, ...] = ()
    #: Δ_AB of an interleaved experiment (docs/metrics.md#interleaving): None for an A/B test
    interleaving: InterleavingSection | None = None
    #: The store's metrics the report was computed with, for its presenters' labels
    #: and directions (not in the JSON document, which carries each metric's label).
    catalog: Catalog = field(
        default=BUILTIN_CATALOG, repr=False, compare=False, metadata=NOT_IN_JSON
    )
