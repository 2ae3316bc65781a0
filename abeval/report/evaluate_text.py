"""The plain-text report of ``abeval evaluate``: :func:`render_text` turns an
:class:`~abeval.analysis.evaluate.EvaluationResult` into aligned tables of the
inputs, the metrics per model, the paired comparisons, the rating metrics and
the conventions.

An undefined number prints as ``–``; metric values have four decimals
(:func:`_fmt`, fixed digits without thousands separators, unlike
:func:`abeval.formatting.fixed`); p-values read as :func:`abeval.formatting.pvalue`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from abeval.analysis.evaluate import EvaluationResult
from abeval.formatting import pvalue

_UNDEFINED = "–"


def render_text(result: EvaluationResult) -> str:
    """A plain-text report: inputs, per-model metrics, comparisons, ratings, conventions."""
    lines = _inputs(result)
    if result.metrics:
        lines += ["", *_metrics(result)]
    if result.comparisons:
        lines += ["", *_comparisons(result)]
    if result.ratings:
        lines += ["", *_ratings(result)]
    lines.append("")
    lines.append("conventions: " + "; ".join(f"{k}={v}" for k, v in result.conventions.items()))
    if result.per_user_path:
        lines.append(f"per-user values written to {result.per_user_path}")
    return "\n".join(lines)


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or not math.isfinite(x):
        return _UNDEFINED
    return f"{x:.{digits}f}"


def _p(x: float | None) -> str:
    return _UNDEFINED if x is None else pvalue(x)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns as wide as their widest cell; the first left-aligned, the rest right."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _inputs(result: EvaluationResult) -> list[str]:
    """One line per file read, one per model's users."""
    lines: list[str] = []
    for f in result.files:
        extra = f", {f.users} users" if f.users else ""
        dup = f", {f.duplicates_removed} duplicates removed" if f.duplicates_removed else ""
        lines.append(f"{f.role}: {f.path} ({f.rows} rows{extra}{dup})")
    for cov in result.coverage:
        lines.append(
            f"{cov.model}: {cov.users_evaluated} users evaluated; {cov.users_without_truth} users "
            f"without truth left out; {cov.truth_users_without_recommendations} of "
            f"{cov.truth_users} truth users without recommendations; "
            f"{cov.truth_users_without_relevant} truth users without a relevant item"
        )
    return lines


def _metrics(result: EvaluationResult) -> list[str]:
    """The value (± standard error) of each metric per model, then what each
    metric covers for the baseline."""
    by = {(m.metric, m.group): m for m in result.metrics}
    labels = list(dict.fromkeys(m.metric for m in result.metrics))
    rows = []
    for label in labels:
        cells = [label]
        for model in result.models:
            m = by.get((label, model))
            if m is None:
                cells.append("")
                continue
            se = m.std_error
            cells.append(_fmt(m.value) + (f" ±{_fmt(se)}" if se is not None else ""))
        rows.append(cells)
    lines = _table(["metric", *result.models], rows)
    lines.append("(± standard error over users)")
    lines.append("coverage of each metric:")
    baseline = result.models[0]
    for label in labels:
        m = by.get((label, baseline))
        if m is None:
            continue
        parts = [f"{m.users} users, {m.lists} lists"]
        parts += [f"{v} {k.replace('_', ' ')}" for k, v in m.left_out.items() if v]
        lines.append(f"  {label} ({baseline}): {', '.join(parts)}")
    return lines


def _comparisons(result: EvaluationResult) -> list[str]:
    header = [
        "metric",
        "model",
        "baseline",
        "model",
        "diff",
        "95% CI",
        "p (t)",
        "p (rand)",
        "W/T/L",
    ]
    rows = [
        [
            c.metric,
            c.model,
            _fmt(c.baseline_mean),
            _fmt(c.model_mean),
            _fmt(c.difference),
            f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]",
            _p(c.p_t_holm),
            _p(c.p_randomization_holm),
            f"{c.wins}/{c.ties}/{c.losses}",
        ]
        for c in result.comparisons
    ]
    title = (
        f"paired comparison with {result.models[0]} "
        "(difference = model − baseline; Holm-adjusted p)"
    )
    return [title, *_table(header, rows)]


def _ratings(result: EvaluationResult) -> list[str]:
    rows = [
        [
            r.metric,
            r.model,
            _fmt(r.value),
            f"{r.pairs_predicted}/{r.truth_pairs}",
            _fmt(r.coverage, 3),
        ]
        for r in result.ratings
    ]
    return _table(["metric", "model", "value", "pairs predicted", "coverage"], rows)
