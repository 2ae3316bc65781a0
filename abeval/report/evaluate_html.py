"""The HTML page of ``abeval evaluate --format html``: model comparisons, offline.

:func:`render_html` turns an :class:`~abeval.analysis.evaluate.EvaluationResult`
into one self-contained page in the visual language of the experiment report
(:mod:`abeval.report.html`): the same page shell (``reports/base.html.j2``) and
stylesheet (``reports/report.css``, inlined), the same Jinja environment and
filters (:mod:`abeval.report.templates`, :mod:`abeval.formatting`), the same
interval bars (``reports/_macros.html.j2``, :mod:`abeval.report.charts`).
No JavaScript, no external resources.

The template (``reports/evaluate.html.j2``) reads one object,
:class:`~abeval.report.evaluate_context.EvaluationContext`, built by
:func:`build_context`. It holds the result itself (every number on the page is
read from it) plus presentation decisions: the order of rows, where a bar falls in
pixels, which row is coloured. Nothing here computes a statistic.

The page's environment adds two filters to the report's: ``signed`` and
``signed_interval``, a difference of metric values (and its interval) with an
explicit sign, in the metric's own units (the report's ``pct``/``interval`` are
for relative lifts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from abeval import __version__
from abeval.analysis.evaluate import EvaluationResult, PairedComparison
from abeval.errors import AbevalError
from abeval.formatting import signed, signed_interval
from abeval.metrics.base import MetricDefinition
from abeval.metrics.registry import parse_metric
from abeval.metrics.results import OfflineMetricResult
from abeval.report.charts import bar_scale, difference_axis, interval_bar
from abeval.report.evaluate_context import (
    ComparisonRow,
    ComparisonTable,
    CoverageRow,
    EvaluationContext,
    LeftOutRow,
    MetricNote,
    OfflineMetricRow,
)
from abeval.report.templates import evaluation_environment as environment
from abeval.report.tones import offline_lower_is_better, tone

__all__ = [
    "DEFAULT_PATH",
    "EvaluationContext",
    "build_context",
    "environment",
    "render_html",
    "signed",
    "signed_interval",
]

TEMPLATE = "evaluate.html.j2"
DEFAULT_PATH = Path("reports") / "evaluation.html"


# --------------------------------------------------------------------------- builders


def _definition(label: str) -> MetricDefinition | None:
    """The definition of the metric labelled ``label``, None if unknown."""
    try:
        return parse_metric(label).definition
    except AbevalError:
        return None


def _labels(result: EvaluationResult) -> list[str]:
    return list(dict.fromkeys(m.metric for m in result.metrics))


def _metric_rows(result: EvaluationResult) -> tuple[OfflineMetricRow, ...]:
    by = {(m.metric, m.group): m for m in result.metrics}
    rows = []
    for label in _labels(result):
        found = _definition(label)
        rows.append(
            OfflineMetricRow(
                label=label,
                title=found.title if found else "",
                kind=found.kind if found else "",
                lower_is_better=offline_lower_is_better(label),
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


def _bar_label(c: PairedComparison) -> str:
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
                tone=tone(significant, c.difference, offline_lower_is_better(c.metric)),
                bar=replace(bar, label=_bar_label(c)),
            )
        )
    return ComparisonTable(
        rows=tuple(rows),
        axis=difference_axis(scale),
        multi=len({c.model for c in comparisons}) > 1,
        count=len(comparisons),
    )


def _notes(
    result: EvaluationResult,
    metrics: Sequence[OfflineMetricRow],
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
    first: dict[str, OfflineMetricResult] = {}
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
                title=found.title,
                formula=found.formula,
                reference=found.reference,
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
