"""The metric registry: names such as ``ndcg@10``, ``ap@5`` or ``mrr`` → :class:`MetricSpec`.

``parse_metric("ndcg@10")`` looks the name up (case-insensitive, with aliases
such as ``p@5`` or ``hr@10``), checks the cutoff, and attaches the conventions.
A misspelt name raises :class:`~abeval.errors.AbevalError` naming the closest
known metrics (:func:`abeval.errors.close_matches`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from abeval.errors import AbevalError, OptionError, close_matches
from abeval.metrics import (
    ap,
    auc,
    bpref,
    coverage,
    diversity,
    entropy,
    gini,
    hit_rate,
    mae,
    mean_ap,
    mrr,
    ndcg,
    novelty,
    precision,
    recall,
    rmse,
    rprec,
    serendipity,
)
from abeval.metrics.base import MetricDefinition
from abeval.metrics.spec import Conventions, MetricSpec

#: The offline metrics' definitions by name (read-only).
DEFINITIONS: Mapping[str, MetricDefinition] = MappingProxyType(
    {
        m.DEFINITION.name: m.DEFINITION
        for m in (
            precision,
            recall,
            hit_rate,
            mrr,
            ap,
            mean_ap,
            ndcg,
            rprec,
            bpref,
            auc,
            coverage,
            gini,
            entropy,
            novelty,
            diversity,
            serendipity,
            rmse,
            mae,
        )
    }
)

#: Every name a metric is known by (its own and its aliases) → its own (read-only).
_ALIASES: Mapping[str, str] = MappingProxyType(
    {n: d.name for d in DEFINITIONS.values() for n in (d.name, *d.aliases)}
)

_NAME = re.compile(r"^([a-z][a-z0-9_]*?)(?:@(\d+|all))?$")


def definition(name: str) -> MetricDefinition:
    """The definition of the metric called ``name`` (canonical name or alias)."""
    key = _ALIASES.get(name.lower())
    if key is None:
        raise AbevalError(f"metric {name!r}: {_unknown(name)}")
    return DEFINITIONS[key]


def offline_lower_is_better(label: str) -> bool:
    """The direction of the offline metric labelled ``label`` (``rmse``,
    ``ndcg@10``), from its definition; False for a name the registry does not know."""
    try:
        return definition(label.split("@", 1)[0]).lower_is_better
    except AbevalError:
        return False


def known_names() -> list[str]:
    return sorted(DEFINITIONS)


def _example(d: MetricDefinition, k: str | None = None) -> str:
    if d.cutoff == "none":
        return d.name
    if d.cutoff == "required":
        return f"{d.name}@{k or 10}"
    return f"{d.name}@{k}" if k else d.name


def _unknown(text: str, k: str | None = None) -> str:
    base = text.split("@", 1)[0].lower()
    close = close_matches(base, _ALIASES, n=3, cutoff=0.5)
    suggestions: list[str] = []
    for c in close:
        example = _example(DEFINITIONS[_ALIASES[c]], k)
        if example not in suggestions:
            suggestions.append(example)
    hint = f"did you mean {' or '.join(suggestions)}? " if suggestions else ""
    return f"unknown metric {text!r}; {hint}known metrics: {', '.join(known_names())}"


def parse_metric(text: str, conventions: Conventions | None = None) -> MetricSpec:
    """Parse one metric name (``ndcg@10``, ``MRR``, ``p@5``, ``ap@all``)."""
    conventions = conventions or Conventions()
    raw = text.strip()
    match = _NAME.match(raw.lower())
    if not match:
        raise OptionError("metrics", raw, _unknown(raw), allowed=known_names())
    name, k_text = match.group(1), match.group(2)
    key = _ALIASES.get(name)
    if key is None:
        unknown = _unknown(raw, k_text if k_text != "all" else None)
        raise OptionError("metrics", raw, unknown, allowed=known_names())
    d = DEFINITIONS[key]
    k: int | None = None
    if k_text is not None and k_text != "all":
        k = int(k_text)
        if k < 1:
            raise OptionError("metrics", raw, f"the cutoff must be at least 1, as in {d.name}@10")
    if d.cutoff == "none" and k_text is not None:
        raise OptionError("metrics", raw, f"{d.name} takes no cutoff; write {d.name}")
    if d.cutoff == "required" and k is None:
        raise OptionError("metrics", raw, f"needs a cutoff; write {d.name}@10 (or another K)")
    return MetricSpec(name=d.name, k=k, conventions=conventions, definition=d)


def parse_offline_metrics(
    names: str | Iterable[str],
    ks: Sequence[int] = (),
    conventions: Conventions | None = None,
) -> list[MetricSpec]:
    """Parse a comma-separated list (or an iterable) of metric names.

    A name without ``@K`` for a metric that needs a cutoff (``precision``,
    ``recall``, ``hit_rate`` and the beyond-accuracy metrics) is taken at every
    K in ``ks``; ``ndcg``, ``ap``, ``map`` and ``mrr`` without ``@K`` use the
    whole list. Duplicates are dropped, order is kept.
    """
    items = names.split(",") if isinstance(names, str) else list(names)
    out: list[MetricSpec] = []
    for item in items:
        text = item.strip()
        if not text:
            continue
        base = text.split("@", 1)[0].lower()
        key = _ALIASES.get(base)
        if key is not None and "@" not in text and DEFINITIONS[key].cutoff == "required" and ks:
            specs = [parse_metric(f"{base}@{k}", conventions) for k in ks]
        else:
            specs = [parse_metric(text, conventions)]
        for spec in specs:
            if spec not in out:
                out.append(spec)
    if not out:
        raise OptionError("metrics", None, "no metric named; give names such as ndcg@10,ap@10,mrr")
    return out


def default_ranking_metrics(
    ks: Sequence[int], conventions: Conventions | None = None
) -> list[MetricSpec]:
    """precision, recall, AP, NDCG and hit rate at every K, then MRR over the whole list."""
    names = [f"{n}@{k}" for k in ks for n in ("precision", "recall", "ap", "ndcg", "hit_rate")]
    return parse_offline_metrics([*names, "mrr"], conventions=conventions)
