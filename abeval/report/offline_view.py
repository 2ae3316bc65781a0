"""What the report's offline section shows, for the text report and the page alike.

The section shows one line per replayed metric and treatment arm (lift,
corrected interval, p and adjusted p, as the online tables) and one line per
beyond-accuracy metric (its value in each arm). What every line would otherwise
repeat goes once into a legend: the conventions the metrics share (and those
only some have, named with them), what was left out of the averages, the online
lift the section stands beside. A metric that cannot vary (the analysis marks it
``constant``: the same value for every user of every arm, such as recall@K once K
reaches the list length) is not shown; a note says which and why
(docs/metrics.md#log-replay).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abeval.analysis.online_metrics import direction
from abeval.analysis.report_model import ExperimentReport, OfflineResult, OfflineValue
from abeval.formatting import count, pct


@dataclass(frozen=True)
class BeyondRow:
    """One beyond-accuracy metric: its result in each arm of :attr:`OfflineView.arms`
    (None where the report has none)."""

    metric: str
    values: tuple[OfflineValue | None, ...]


@dataclass(frozen=True)
class OfflineView:
    """The offline section: ``rows`` (the comparisons shown, in the report's
    order), ``hidden`` (one sentence per metric that cannot vary), ``legend``
    (conventions and what was left out, once for the section), ``online`` (the
    online lift shown beside, "" when the report has none), ``arms`` (control
    first), the ``beyond`` rows and ``comparisons``, the size of the family the
    offline p-values were corrected over."""

    rows: tuple[OfflineResult, ...]
    hidden: tuple[str, ...]
    legend: tuple[str, ...]
    online: str
    arms: tuple[str, ...]
    beyond: tuple[BeyondRow, ...]
    comparisons: int


def significant(o: OfflineResult) -> bool:
    """Whether the replayed lift is significant after correction, by the rule of
    every table of the report (:func:`abeval.analysis.online_metrics.direction`)."""
    return direction(o.comparison) != 0


def offline_view(report: ExperimentReport) -> OfflineView:
    """The section of ``report`` (module doc)."""
    rows = tuple(o for o in report.offline if not o.constant)
    hidden = tuple(dict.fromkeys(o.constant_reason for o in report.offline if o.constant))
    arms = tuple(a.arm for a in sorted(report.arms, key=lambda a: not a.is_control))
    by_metric: dict[str, dict[str, OfflineValue]] = {}
    for v in report.offline_values:
        by_metric.setdefault(v.metric, {})[v.arm] = v
    beyond = tuple(
        BeyondRow(metric, tuple(values.get(arm) for arm in arms))
        for metric, values in by_metric.items()
    )
    conventions = [(o.metric, o.convention) for o in rows]
    conventions += [(v.metric, v.convention) for v in report.offline_values]
    legend = convention_lines(conventions) + left_out_lines(rows)
    return OfflineView(
        rows=rows,
        hidden=hidden,
        legend=tuple(legend),
        online=_online(report),
        arms=arms,
        beyond=beyond,
        comparisons=sum(o.comparison.relative.p_adjusted is not None for o in report.offline),
    )


def names(labels: Iterable[str]) -> str:
    """Metric labels, each base name once with its cutoffs: ``recall@5/10, auc``."""
    cutoffs: dict[str, list[str]] = {}
    for label in labels:
        base, _, k = label.partition("@")
        ks = cutoffs.setdefault(base, [])
        if k and k not in ks:
            ks.append(k)
    return ", ".join(f"{base}@{'/'.join(ks)}" if ks else base for base, ks in cutoffs.items())


def convention_lines(results: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The conventions of ``(label, convention)`` pairs, each ``key=value`` once: the
    pairs every metric shares on one line, the others grouped by the metrics that
    have them. A cutoff is left out where the label already says it (``@K``)."""
    holders: dict[tuple[str, str], list[str]] = {}
    for label, convention in results:
        for key, value in convention.items():
            if key == "cutoff" and "@" in label:
                continue
            holders.setdefault((key, str(value)), []).append(label)
    everyone = [label for label, _ in results]
    groups: dict[tuple[str, ...], list[str]] = {}
    for (key, value), labels in holders.items():
        who = tuple(dict.fromkeys(labels))
        groups.setdefault(who, []).append(f"{key}={value}")
    lines = []
    for who, pairs in groups.items():
        scope = "every metric" if set(who) == set(everyone) else names(who)
        lines.append(f"{scope}: {' · '.join(pairs)}")
    lines.sort(key=lambda line: not line.startswith("every metric"))
    return lines


def left_out_lines(rows: Sequence[OfflineResult]) -> list[str]:
    """What was left out of the averages, per reason and arm, for the metrics that
    left out the same counts (zero counts are not mentioned)."""
    groups: dict[tuple[tuple[str, str, int], ...], list[str]] = {}
    for o in rows:
        counts = [("control", k, n) for k, n in o.control_lists_left_out.items() if n]
        counts += [(o.arm, k, n) for k, n in o.lists_left_out.items() if n]
        if counts:
            groups.setdefault(tuple(counts), []).append(o.metric)
    lines = []
    for key, labels in groups.items():
        by_reason: dict[str, list[str]] = {}
        for arm, reason, n in key:
            by_reason.setdefault(reason.replace("_", " "), []).append(f"{arm} {count(n)}")
        parts = [f"{reason} ({', '.join(arms)})" for reason, arms in by_reason.items()]
        lines.append(f"left out of {names(labels)}: {'; '.join(parts)}")
    return lines


def _online(report: ExperimentReport) -> str:
    """``online lift of CTR: treatment +7.32%``: the online lift the replayed metrics stand
    beside (the first primary metric's), "" when the report has none."""
    reference = next((o.agrees_with for o in report.offline if o.agrees_with), None)
    lifts = [m for m in report.metrics if m.metric == reference]
    if not lifts:
        return ""
    arms = ", ".join(f"{m.arm} {pct(m.comparison.relative.effect)}" for m in lifts)
    return f"online lift of {lifts[0].label}: {arms}"


def offline_status_text(status: str) -> str:
    """Why a report has no offline results, in words ("" when it has them)."""
    from abeval.analysis.report_model import OFFLINE_NOT_REQUESTED

    if status == OFFLINE_NOT_REQUESTED:
        return "not requested (--no-offline)"
    return "" if status == "ok" else status
