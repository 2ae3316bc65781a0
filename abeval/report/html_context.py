"""What the experiment report page reads: :class:`ReportContext` and its rows.

``report.html.j2`` renders one :class:`ReportContext` (the template's ``ctx``),
built by :func:`abeval.report.html.build_context` from the sections of
:mod:`abeval.report.html_sections`. Each class here is one table or line of the
page: the model's result it shows (every number comes from the
:class:`~abeval.analysis.report_model.ExperimentReport`) plus the presentation
decisions taken for it (interval drawn, colour, bar geometry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from abeval.analysis.report_model import (
    ArmInfo,
    Decision,
    ExperimentReport,
    OfflineResult,
    OnlineMetricResult,
    PowerInfo,
    Role,
    SegmentResult,
    VerdictResult,
)
from abeval.report.charts import IntervalBar, LiftChart, Tick, UsersChart
from abeval.report.interleaving_text import InterleavingView
from abeval.report.offline_view import OfflineView
from abeval.report.ope_context import OpeContext
from abeval.report.predicted_context import PredictedContext
from abeval.report.tones import Tone

CheckState = Literal["pass", "fail", "warn", "info"]


@dataclass(frozen=True)
class HealthCheck:
    """One row of the health table: ``name`` of the check, ``state`` (pass, fail,
    warn or info: sets the colour), ``result`` (the word shown) and ``detail``."""

    name: str
    state: CheckState
    result: str
    detail: str


@dataclass(frozen=True)
class DecisionCard:
    """One treatment arm's overall decision (the model's ``decision``, with its
    reason and inputs) and the card's ``tone`` (good, bad, warn or neutral)."""

    decision: Decision
    tone: str
    basis: str = ""  # what the decision read (abeval.report.decision_text)
    guardrails: tuple[str, ...] = ()  # each guardrail's reading
    reason: str = ""  # the reason in words (abeval.report.words.decision_reason)


@dataclass(frozen=True)
class VerdictLine:
    """One primary metric's verdict: the model's ``verdict`` (with its reason),
    the metric's ``label`` and the banner ``tone`` (good, bad, warn or neutral)."""

    verdict: VerdictResult
    label: str
    tone: str


@dataclass(frozen=True)
class OnlineMetricRow:
    """One metric × treatment arm of a metric table.

    ``result`` is the arm's :class:`OnlineMetricResult`; ``interval`` the relative
    interval shown (the multiplicity-corrected one when the report has it,
    ``corrected`` says which); ``tone`` is good or bad only when the result is
    significant after correction; ``as_percent`` prints the arm values as
    percentages (rates); ``numerator``/``denominator`` name the raw sums under
    the values; ``bar`` is the interval's SVG geometry.
    """

    result: OnlineMetricResult
    interval: tuple[float, float] | None
    corrected: bool
    tone: Tone
    as_percent: bool
    numerator: str
    denominator: str
    description: str
    lower_is_better: bool
    bar: IntervalBar
    absolute: str = ""  # the absolute lift (treatment − control, CUPED-adjusted where used)
    # The fixed-horizon interval while the basis is always-valid, in words, shown
    # only in a folded detail (abeval.report.method_text.reference_words).
    reference: str = ""
    # What the metric's cap does to a lift, in words (abeval.report.words.capping_bias).
    capped: str = ""
    # Which day the shown numbers are from, once the metric reached its expected
    # size before today (abeval.report.method_text.decided_words), shown unfolded.
    decided: str = ""


@dataclass(frozen=True)
class MetricTable:
    """The metrics of one role (primary, guardrail or secondary): ``anchor`` is
    the section id, ``axis`` the labels of the shared bar axis."""

    role: Role
    anchor: str
    title: str
    note: str
    rows: tuple[OnlineMetricRow, ...]
    axis: tuple[Tick, ...]
    unbounded: tuple[str, ...] = ()  # why an interval reads unbounded, once


@dataclass(frozen=True)
class PowerLine:
    """Power of one primary metric and arm: the model's ``info``, the metric's
    ``label`` and ``progress``, the share of the users a target-sized effect needs
    that the test already has (capped at 1; None when the need is unknown)."""

    info: PowerInfo
    label: str
    progress: float | None
    #: The power under the default basis in words (``looks_text``), or None.
    looks: str | None = None


@dataclass(frozen=True)
class OfflineRow:
    """One replayed offline metric and arm: the model's ``result``, the corrected
    ``interval`` shown, its ``bar`` and ``tone`` (good/bad when significant after
    correction, as in the metric tables)."""

    result: OfflineResult
    interval: tuple[float, float] | None
    significant: bool
    bar: IntervalBar
    tone: Tone


@dataclass(frozen=True)
class OfflineTable:
    """The offline section: the replayed comparisons shown (:class:`OfflineRow`,
    metrics that cannot vary left out) with the shared bar ``axis``; ``view``
    holds the legend, the hidden metrics, the online lift beside and the
    beyond-accuracy rows (:class:`~abeval.report.offline_view.OfflineView`);
    ``corrected``: the intervals were widened for multiple testing;
    ``unbounded``: why an interval reads unbounded, once."""

    rows: tuple[OfflineRow, ...]
    axis: tuple[Tick, ...]
    view: OfflineView
    corrected: bool
    unbounded: tuple[str, ...] = ()


@dataclass(frozen=True)
class SegmentRow:
    """One segment value × metric × arm: the model's ``result``, the metric
    ``label``, the corrected ``interval``, whether it excludes zero
    (``significant``), its ``tone`` and ``bar``."""

    result: SegmentResult
    label: str
    interval: tuple[float, float] | None
    significant: bool
    tone: Tone
    bar: IntervalBar


@dataclass(frozen=True)
class SegmentTable:
    """Segment rows by ``segment`` (the attribute), with the shared bar ``axis``."""

    segment: str
    rows: tuple[SegmentRow, ...]
    axis: tuple[Tick, ...]
    unbounded: tuple[str, ...] = ()  # why an interval reads unbounded, once


@dataclass(frozen=True)
class StatisticsTable:
    """The sufficient statistics per arm, transposed for a table: ``arms`` in
    column order, ``users`` per arm, ``sums`` and ``cross`` as (name, value per
    arm) rows (None where an arm lacks that entry)."""

    arms: tuple[str, ...]
    users: tuple[int | None, ...]
    sums: tuple[tuple[str, tuple[float | None, ...]], ...]
    cross: tuple[tuple[str, tuple[float | None, ...]], ...]


@dataclass(frozen=True)
class ReportContext:
    """Everything ``report.html.j2`` reads, in one object (the template's ``ctx``).

    Keys:

    - ``report``: the :class:`ExperimentReport` itself; every number on the page
      comes from it.
    - ``title``: the page title.
    - ``control``: the control arm's :class:`ArmInfo`; ``treatments``: the other arms.
    - ``total_users``: users analysed in all arms (sum of ``report.arms``).
    - ``first_day``, ``last_day``, ``days``: the test's calendar span from the daily
      points (falling back to the first and last event), and its length in days.
    - ``decisions``: one :class:`DecisionCard` per treatment arm, shown first.
    - ``control_rule``: in words, how the control arm was chosen.
    - ``method``: one line naming the method (fixed horizon or sequential), CUPED
      and the Bayesian view.
    - ``alerts``: the failed health checks, one sentence each, shown in the red
      banner at the top (empty: no banner); ``srm_failed``: the sample ratio check
      failed.
    - ``checks``: the rows of the health table (:class:`HealthCheck`).
    - ``verdicts``: one :class:`VerdictLine` per primary metric and arm.
    - ``tables``: the metric tables (:class:`MetricTable`), primary, then
      guardrails, then secondary; empty roles are left out.
    - ``lift_charts``: one :class:`LiftChart` per primary metric and arm
      (cumulative lift by day); ``users_chart``: new users per day per arm
      (:class:`UsersChart`, None without daily points).
    - ``power``: one :class:`PowerLine` per primary metric and arm.
    - ``guardrail_power``: one sentence per guardrail with a margin and arm: can it
      be shown non-inferior at the planned size.
    - ``sources``: where each setting came from (record, flag or default), one line.
    - ``offline``: an :class:`OfflineTable`, None when the report has no offline
      results (the page then shows ``offline_status``, in words).
    - ``segments``: a :class:`SegmentTable`, None without a segment breakdown.
    - ``cuped``: the metric rows whose comparison used CUPED (methodology table).
    - ``statistics``: the sufficient statistics as a :class:`StatisticsTable`.
    - ``settings``: (name, value) rows of the methodology's settings table.
    - ``generated``: when the report was generated, formatted.
    - ``freshness``: how long before the report the last event happened, in
      words (empty when unknown).
    - ``ope``: the off-policy estimates (:class:`~abeval.report.ope_context.OpeContext`),
      None when the report has none.
    - ``predicted``: the lifts a recorded evaluation predicted
      (:class:`~abeval.report.predicted_context.PredictedContext`), None when none is
      recorded.
    - ``interleaving``: an interleaved experiment's section
      (:class:`~abeval.report.interleaving_text.InterleavingView`), which the page
      shows in place of the A/B sections; None for an A/B test.
    """

    report: ExperimentReport
    title: str
    control: ArmInfo
    treatments: tuple[ArmInfo, ...]
    total_users: int
    first_day: str | None
    last_day: str | None
    days: int | None
    decisions: tuple[DecisionCard, ...]
    control_rule: str
    method: str
    alerts: tuple[str, ...]
    srm_failed: bool
    checks: tuple[HealthCheck, ...]
    verdicts: tuple[VerdictLine, ...]
    tables: tuple[MetricTable, ...]
    lift_charts: tuple[LiftChart, ...]
    users_chart: UsersChart | None
    power: tuple[PowerLine, ...]
    offline: OfflineTable | None
    segments: SegmentTable | None
    cuped: tuple[OnlineMetricRow, ...]
    statistics: StatisticsTable
    settings: tuple[tuple[str, str], ...]
    generated: str
    freshness: str
    ope: OpeContext | None = None  # reports/_ope.html.j2 (abeval.report.ope_context)
    # reports/_predicted.html.j2 (abeval.report.predicted_context)
    predicted: PredictedContext | None = None
    # Guardrails' non-inferiority plan and where each setting came from
    # (abeval.report.decision_text).
    guardrail_power: tuple[str, ...] = ()
    sources: str = ""
    offline_status: str = ""  # why there are no offline results, in words
    # reports/_interleaving.html.j2: an interleaved experiment's section, else None
    interleaving: InterleavingView | None = None
