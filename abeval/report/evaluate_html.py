"""The HTML page of ``abeval evaluate --format html``: model comparisons, offline.

:func:`render_html` turns an :class:`~abeval.analysis.evaluate.EvaluationResult`
into one self-contained page in the visual language of the experiment report
(:mod:`abeval.report.html`): the same stylesheet (``reports/report.css``, inlined),
the same Jinja environment and filters (:mod:`abeval.formatting`), the
same interval bars (``reports/_macros.html.j2``, :mod:`abeval.report.charts`).
No JavaScript, no external resources.

The template (``reports/evaluate.html.j2``) reads one object,
:class:`EvaluationContext`, built by :func:`build_context`. It holds the result
itself (every number on the page is read from it) plus presentation decisions:
the order of rows, where a bar falls in pixels, which row is coloured. Nothing
here computes a statistic.

Two filters are added to the report's: ``signed`` and ``signed_interval``, a
difference of metric values (and its interval) with an explicit sign, in the
metric's own units (the report's ``pct``/``interval`` are for relative lifts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

from jinja2 import Environment

from abeval import __version__
from abeval.analysis.evaluate import (
    Comparison,
    Coverage,
    EvaluationResult,
    FileSummary,
    RatingResult,
)
from abeval.errors import AbevalError
from abeval.formatting import NA, number
from abeval.metrics.results import MetricResult
from abeval.report.charts import IntervalBar, Scale, Tick, bar_scale, interval_bar
from abeval.report.html import environment as report_environment

Tone = Literal["good", "bad", ""]

TEMPLATE = "evaluate.html.j2"
DEFAULT_PATH = Path("reports") / "evaluation.html"

#: Metrics where a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = frozenset({"rmse", "mae"})


# --------------------------------------------------------------------------- filters


def signed(x: float | None) -> str:
    """A difference in the metric's units with its sign: ``0.0123`` → ``+0.0123``,
    ``-0.0181`` → ``-0.0181`` (digits as :func:`~abeval.formatting.number`)."""
    if x is None:
        return NA
    text = number(x)
    return "+" + text if x > 0 else text


def signed_interval(ci: Sequence[float] | None) -> str:
    """An interval of a difference: ``(-0.0458, 0.0097)`` → ``[-0.0458, +0.0097]``."""
    if ci is None:
        return NA
    return f"[{signed(ci[0])}, {signed(ci[1])}]"


EXTRA_FILTERS = {"signed": signed, "signed_interval": signed_interval}


# --------------------------------------------------------------------------- context


@dataclass(frozen=True)
class CoverageRow:
    """One model's users against the truth: the result's ``coverage`` and the
    model's recommendations ``file`` (rows, duplicates removed; None if absent)."""

    coverage: Coverage
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
class MetricRow:
    """One metric of the per-model table: its ``label`` (``ndcg@10``), ``title``
    (``NDCG``, empty when unknown), ``kind`` (ranking, beyond or empty),
    ``lower_is_better``, and ``cells``: the :class:`MetricResult` of each model in
    the order of ``EvaluationResult.models`` (None where a model has none)."""

    label: str
    title: str
    kind: str
    lower_is_better: bool
    cells: tuple[MetricResult | None, ...]


@dataclass(frozen=True)
class ComparisonRow:
    """One model against the baseline on one metric.

    ``comparison`` is the result's :class:`Comparison` (every number shown);
    ``interval`` its (ci_low, ci_high) or None; ``significant`` is true when both
    Holm-adjusted p-values (paired t and randomisation) are below α; ``tone`` is
    good or bad only then (by the sign of the difference and the metric's
    direction); ``bar`` is the interval's SVG geometry on the table's axis.
    """

    comparison: Comparison
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
    - ``metrics``: the per-model table, one :class:`MetricRow` per metric.
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
    metrics: tuple[MetricRow, ...]
    comparison: ComparisonTable | None
    ratings: tuple[RatingResult, ...]
    alpha: float
    settings: tuple[tuple[str, str], ...]
    conventions: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    definitions: tuple[MetricNote, ...]


# --------------------------------------------------------------------------- builders


def _definition(label: str) -> tuple[str, str, str, str, str] | None:
    """(name, kind, title, formula, reference) of a metric label, None if unknown."""
    from abeval.metrics.registry import parse_metric

    try:
        spec = parse_metric(label)
    except AbevalError:
        return None
    d = spec.definition
    return d.name, d.kind, d.title, d.formula, d.reference


def _lower_is_better(label: str) -> bool:
    found = _definition(label)
    name = found[0] if found else label.split("@", 1)[0]
    return name in LOWER_IS_BETTER


def _labels(result: EvaluationResult) -> list[str]:
    return list(dict.fromkeys(m.metric for m in result.metrics))


def _metric_rows(result: EvaluationResult) -> tuple[MetricRow, ...]:
    by = {(m.metric, m.group): m for m in result.metrics}
    rows = []
    for label in _labels(result):
        found = _definition(label)
        rows.append(
            MetricRow(
                label=label,
                title=found[2] if found else "",
                kind=found[1] if found else "",
                lower_is_better=_lower_is_better(label),
                cells=tuple(by.get((label, model)) for model in result.models),
            )
        )
    return tuple(rows)


def _left_out(result: EvaluationResult) -> tuple[LeftOutRow, ...]:
    by = {(m.metric, m.group): m for m in result.metrics}
    rows = []
    for label in _labels(result):
        cells = tuple(
            tuple((reason, int(n)) for reason, n in m.left_out.items() if n)
            if (m := by.get((label, model))) is not None
            else ()
            for model in result.models
        )
        if any(cells):
            rows.append(LeftOutRow(label, cells))
    return tuple(rows)


def _cutoffs(result: EvaluationResult) -> tuple[int, ...]:
    ks: set[int] = set()
    for m in result.metrics:
        text = m.convention.get("cutoff", "")
        if text.isdigit():
            ks.add(int(text))
    return tuple(sorted(ks))


_KEY_CONVENTIONS = (
    ("gain", "NDCG gain"),
    ("ap_denominator", "AP denominator"),
    ("empty", "Lists without a relevant item"),
    ("missing_recommendations", "Truth users without a list"),
    ("duplicates", "Repeated items"),
    ("relevant", "Relevant when"),
)


def _tone(significant: bool, difference: float | None, lower_is_better: bool) -> Tone:
    if not significant or difference is None or difference == 0:
        return ""
    better = difference < 0 if lower_is_better else difference > 0
    return "good" if better else "bad"


def _bar_axis(scale: Scale) -> tuple[Tick, ...]:
    """Labels for the ends and the middle of the comparison bars' axis, in the
    metrics' own units (the experiment report's ``bar_axis`` labels percentages)."""
    return (
        Tick(scale(scale.lo), f"{scale.lo:+g}"),
        Tick(scale(0.0), "0"),
        Tick(scale(scale.hi), f"{scale.hi:+g}"),
    )


def _bar_label(c: Comparison) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "no interval"
    return f"difference {signed(c.difference)}, interval {signed(c.ci_low)} to {signed(c.ci_high)}"


def _comparison(result: EvaluationResult, alpha: float) -> ComparisonTable | None:
    if len(result.models) < 2 or not result.comparisons:
        return None
    order = {m: i for i, m in enumerate(result.models)}
    labels = {label: i for i, label in enumerate(_labels(result))}
    comparisons = sorted(
        result.comparisons,
        key=lambda c: (order.get(c.model, len(order)), labels.get(c.metric, len(labels))),
    )
    intervals: list[tuple[float, float] | None] = [
        (c.ci_low, c.ci_high) if c.ci_low is not None and c.ci_high is not None else None
        for c in comparisons
    ]
    scale = bar_scale(intervals)
    rows = []
    for c, ci in zip(comparisons, intervals, strict=True):
        significant = (
            c.status == "ok"
            and c.p_t_holm is not None
            and c.p_randomization_holm is not None
            and c.p_t_holm < alpha
            and c.p_randomization_holm < alpha
        )
        bar = interval_bar(scale, ci, c.difference)
        rows.append(
            ComparisonRow(
                comparison=c,
                interval=ci,
                significant=significant,
                tone=_tone(significant, c.difference, _lower_is_better(c.metric)),
                bar=replace(bar, label=_bar_label(c)),
            )
        )
    return ComparisonTable(
        rows=tuple(rows),
        axis=_bar_axis(scale),
        multi=len({c.model for c in comparisons}) > 1,
        count=len(comparisons),
    )


def _notes(
    result: EvaluationResult,
    metrics: Sequence[MetricRow],
    alpha: float,
    resamples: int | None,
    seed: int | None,
    comparisons: int,
) -> tuple[str, ...]:
    level = f"{(1 - alpha) * 100:g}%"
    kinds = {row.kind for row in metrics}
    notes = []
    if "ranking" in kinds:
        notes.append(
            "Ranking metrics are computed per list (over the top K, or the whole list for a "
            "metric without @K), averaged per user, then over users; ± is the standard error "
            "of that mean over users."
        )
    if "beyond" in kinds:
        notes.append(
            "Beyond-accuracy metrics (coverage, Gini, novelty, diversity ...) are computed "
            "over the top K of each model's lists and are not tested; ± appears where one is "
            "a mean over users."
        )
    if comparisons:
        draws = f"{resamples:,} sign-flip resamples" if resamples is not None else "sign flips"
        seeded = f" (seed {seed})" if seed is not None else ""
        notes += [
            "Comparisons are paired over the users with a value under both models: the "
            "difference is the mean over those users of model − baseline, in the metric's "
            "own units.",
            f"Interval: the {level} paired t interval of that mean difference. It is not "
            "widened for multiple testing, so a bar clear of zero is not by itself a "
            "significant result.",
            "Randomisation test: each user's difference has its sign flipped at random, "
            f"{draws}{seeded}; p = (1 + #{{|mean*| ≥ |mean|}}) / (1 + resamples).",
            f"Holm correction over all {comparisons} (metric, model) comparisons, separately "
            "for the paired t test and for the randomisation test. A comparison is "
            f"significant when both Holm-adjusted p-values are below α = {alpha:g}; only "
            "those rows are coloured, green when the model is better and red when worse.",
            "Wins / ties / losses: users whose difference is above zero, zero (within "
            "10⁻¹²), or below zero.",
        ]
    if result.ratings:
        notes.append(
            "RMSE and MAE are over the (user, item) pairs present in both the predictions "
            "and the truth file; share predicted = pairs predicted / truth pairs. Lower is "
            "better."
        )
    if result.per_user_path:
        notes.append(
            f"Each user's value of every ranking metric was written to {result.per_user_path}."
        )
    return tuple(notes)


def _settings(
    result: EvaluationResult,
    baseline: str | None,
    alpha: float,
    resamples: int | None,
    seed: int | None,
) -> tuple[tuple[str, str], ...]:
    rows = [
        ("Baseline", baseline or "none"),
        ("Significance level α", f"{alpha:g} (two-sided)"),
        ("Multiple-testing correction", "Holm, per test"),
    ]
    if resamples is not None:
        rows.append(("Randomisation resamples", f"{resamples:,}"))
    if seed is not None:
        rows.append(("Randomisation seed", str(seed)))
    rows.append(("Per-user values", result.per_user_path or "not written"))
    return tuple(rows)


def _definitions(result: EvaluationResult) -> tuple[MetricNote, ...]:
    first: dict[str, MetricResult] = {}
    for m in result.metrics:
        first.setdefault(m.metric, m)
    labels = _labels(result) + list(dict.fromkeys(r.metric for r in result.ratings))
    notes = []
    for label in labels:
        found = _definition(label)
        if found is None:
            continue
        found_result = first.get(label)
        notes.append(
            MetricNote(
                label=label,
                title=found[2],
                formula=found[3],
                reference=found[4],
                convention=dict(found_result.convention) if found_result else {},
            )
        )
    return tuple(notes)


def build_context(
    result: EvaluationResult,
    *,
    alpha: float = 0.05,
    resamples: int | None = None,
    seed: int | None = None,
) -> EvaluationContext:
    """The one object the template renders (see :class:`EvaluationContext`).

    ``alpha``, ``resamples`` and ``seed`` are the settings ``evaluate`` ran with
    (the result does not carry them): ``alpha`` decides which comparisons are
    coloured; the other two are only shown.
    """
    models = tuple(result.models)
    recs = {f.name: f for f in result.files if f.role == "recommendations"}
    comparison = _comparison(result, alpha)
    # Only recommendation files are compared (with the first); prediction files
    # (the models of a predictions-only run) have no baseline.
    baseline = models[0] if models and result.coverage else None
    metrics = _metric_rows(result)
    title = "Offline evaluation"
    if models:
        title += " · " + " vs ".join(models)
    return EvaluationContext(
        result=result,
        title=title,
        version=__version__,
        models=models,
        baseline=baseline,
        challengers=models[1:] if baseline is not None else (),
        files=tuple(result.files),
        file_names=tuple(Path(f.path).name or f.path for f in result.files),
        truth=next((f for f in result.files if f.role == "truth"), None),
        cutoffs=_cutoffs(result),
        key_conventions=tuple(
            (label, str(result.conventions[key]))
            for key, label in _KEY_CONVENTIONS
            if key in result.conventions
        ),
        coverage=tuple(CoverageRow(c, recs.get(c.model)) for c in result.coverage),
        left_out=_left_out(result),
        warnings=tuple(result.warnings),
        metrics=metrics,
        comparison=comparison,
        ratings=tuple(result.ratings),
        alpha=alpha,
        settings=_settings(result, baseline, alpha, resamples, seed),
        conventions=tuple((k, str(v)) for k, v in result.conventions.items()),
        notes=_notes(
            result, metrics, alpha, resamples, seed, comparison.count if comparison else 0
        ),
        definitions=_definitions(result),
    )


# --------------------------------------------------------------------------- rendering


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The experiment report's environment (templates from ``reports/``,
    autoescaping, StrictUndefined, the formatting filters), overlaid with its own
    copy of the filters plus :data:`EXTRA_FILTERS` (and its own template cache), so
    the shared environment is untouched."""
    env = report_environment().overlay(cache_size=50)
    env.filters = {**env.filters, **EXTRA_FILTERS}
    return env


def render_html(
    result: EvaluationResult,
    *,
    alpha: float = 0.05,
    resamples: int | None = None,
    seed: int | None = None,
) -> str:
    """The evaluation as one self-contained HTML page."""
    ctx = build_context(result, alpha=alpha, resamples=resamples, seed=seed)
    return environment().get_template(TEMPLATE).render(ctx=ctx)
