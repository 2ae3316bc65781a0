"""What the evaluation page reads: :class:`EvaluationContext` and its rows.

``evaluate.html.j2`` renders one :class:`EvaluationContext` (the template's
``ctx``), built by :func:`abeval.report.evaluate_html.build_context`. Each class
here is one table of the page: the result's numbers it shows (every number comes
from the :class:`~abeval.analysis.evaluate.EvaluationResult`) plus the
presentation decisions taken for it (order, colour, bar geometry).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from abeval.analysis.evaluate import (
    EvaluationResult,
    FileSummary,
    PairedComparison,
    RatingResult,
    UserCoverage,
)
from abeval.metrics.results import OfflineMetricResult
from abeval.report.charts import IntervalBar, Tick
from abeval.report.tones import Tone


@dataclass(frozen=True)
class CoverageRow:
    """One model's users against the truth: the result's ``coverage`` and the
    model's recommendations ``file`` (rows, duplicates removed; None if absent)."""

    coverage: UserCoverage
    file: FileSummary | None


@dataclass(frozen=True)
class LeftOutRow:
    """What one metric left out of its averages: the metric ``label`` and, for
    each model in the order of ``EvaluationResult.models``, its non-zero
    (reason, count) pairs (reason as in the result, such as
    ``lists_without_relevant``; empty when nothing was left out)."""

    label: str
    cells: tuple[tuple[tuple[str, int], ...], ...]


@dataclass(frozen=True)
class OfflineMetricRow:
    """One metric of the per-model table: its ``label`` (``ndcg@10``), ``title``
    (``NDCG``, empty when unknown), ``kind`` (ranking, beyond or empty),
    ``lower_is_better``, and ``cells``: the :class:`OfflineMetricResult` of each model in
    the order of ``EvaluationResult.models`` (None where a model has none)."""

    label: str
    title: str
    kind: str
    lower_is_better: bool
    cells: tuple[OfflineMetricResult | None, ...]


@dataclass(frozen=True)
class ComparisonRow:
    """One model against the baseline on one metric.

    ``comparison`` is the result's :class:`PairedComparison` (every number shown);
    ``interval`` its (ci_low, ci_high) or None; ``significant`` is true when both
    Holm-adjusted p-values (paired t and randomisation) are below α; ``tone`` is
    good or bad only then (by the sign of the difference and the metric's
    direction); ``bar`` is the interval's SVG geometry on the table's axis.
    """

    comparison: PairedComparison
    interval: tuple[float, float] | None
    significant: bool
    tone: Tone
    bar: IntervalBar


@dataclass(frozen=True)
class ComparisonTable:
    """The paired comparisons: ``rows`` (by challenger, then metric), the shared
    bar ``axis`` labels, ``multi`` (more than one challenger: rows name their
    model) and ``count`` (comparisons in the Holm family)."""

    rows: tuple[ComparisonRow, ...]
    axis: tuple[Tick, ...]
    multi: bool
    count: int


@dataclass(frozen=True)
class MetricNote:
    """How one metric is defined (methodology): ``label``, ``title``, ``formula``,
    ``reference`` (from the metric registry) and the ``convention`` it was
    computed under (from the baseline's result)."""

    label: str
    title: str
    formula: str
    reference: str
    convention: Mapping[str, str]


@dataclass(frozen=True)
class EvaluationContext:
    """Everything ``evaluate.html.j2`` reads, in one object (the template's ``ctx``).

    Keys:

    - ``result``: the :class:`EvaluationResult` itself; every number on the page
      comes from it.
    - ``title``: the page title; ``version``: the abeval version.
    - ``models``: the model names in order; ``baseline``: the first, which the
      others are compared with (None when there are no recommendation files: a
      predictions-only run compares nothing); ``challengers``: the others (empty
      without a baseline).
    - ``files``: every input file read (:class:`FileSummary`); ``file_names``:
      their names without the folder, in the same order (the header); ``truth``:
      the truth file's summary (None if absent).
    - ``cutoffs``: the cutoffs K of the metrics, ascending.
    - ``key_conventions``: (name, value) of the conventions shown in the header
      (gain, AP denominator, empty lists, missing lists, duplicates, relevance).
    - ``coverage``: one :class:`CoverageRow` per model with recommendations.
    - ``left_out``: one :class:`LeftOutRow` per metric that left something out,
      with the non-zero counts of each model.
    - ``warnings``: the result's warnings, as printed on stderr.
    - ``metrics``: the per-model table, one :class:`OfflineMetricRow` per metric.
    - ``comparison``: the :class:`ComparisonTable`, None with fewer than two models
      or no comparison.
    - ``ratings``: the result's :class:`RatingResult` rows (RMSE, MAE).
    - ``alpha``: the level of the comparison tests and of their intervals.
    - ``settings``: (name, value) rows of the methodology's settings table.
    - ``conventions``: (name, value) rows of the result's conventions.
    - ``notes``: sentences of the methodology explaining how the numbers were made.
    - ``definitions``: one :class:`MetricNote` per metric.
    """

    result: EvaluationResult
    title: str
    version: str
    models: tuple[str, ...]
    baseline: str | None
    challengers: tuple[str, ...]
    files: tuple[FileSummary, ...]
    file_names: tuple[str, ...]
    truth: FileSummary | None
    cutoffs: tuple[int, ...]
    key_conventions: tuple[tuple[str, str], ...]
    coverage: tuple[CoverageRow, ...]
    left_out: tuple[LeftOutRow, ...]
    warnings: tuple[str, ...]
    metrics: tuple[OfflineMetricRow, ...]
    comparison: ComparisonTable | None
    ratings: tuple[RatingResult, ...]
    alpha: float
    settings: tuple[tuple[str, str], ...]
    conventions: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    definitions: tuple[MetricNote, ...]
