"""Metric specifications: a parsed metric name plus the conventions it runs under.

A :class:`MetricSpec` is what the rest of abeval passes around: ``ndcg@10`` with
gain ``linear`` and empty lists ``skip`` is a different spec from ``ndcg@10`` with
gain ``exp2``. Specs are frozen and hashable; their :attr:`MetricSpec.label` is the
name shown to users and :attr:`MetricSpec.convention` the conventions printed
with every result, never mixing conventions silently
(docs/metrics.md#ranking-conventions). The registry
(:mod:`abeval.metrics.registry`) makes specs and hands each its resolved
:class:`~abeval.metrics.base.MetricDefinition`, so a spec never looks a name up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, get_args

from abeval.choices import ApDenominator, Duplicates, Empty, Gain
from abeval.errors import AbevalError

if TYPE_CHECKING:
    from abeval.metrics.base import MetricDefinition

AP_DENOMINATORS: tuple[str, ...] = get_args(ApDenominator)
GAINS: tuple[str, ...] = get_args(Gain)
EMPTY: tuple[str, ...] = get_args(Empty)
DUPLICATES: tuple[str, ...] = get_args(Duplicates)


def _check_choice(option: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise AbevalError(f"unknown {option} convention {value!r}; use one of {', '.join(choices)}")


@dataclass(frozen=True)
class Conventions:
    """The options that change what a metric means (docs/metrics.md#ranking-conventions).

    - ``ap_denominator``: ``R`` (trec_eval ``map_cut_K``), ``min_rk`` = min(R, K)
      (Spark, recommenders, RecBole), ``hits`` = relevant items retrieved in the
      top K (torchmetrics).
    - ``gain``: NDCG gain ``linear`` g(r) = r (trec_eval), ``exp2`` g(r) = 2^r − 1
      (Burges et al. 2005), ``binary`` g(r) = 1 for r > 0.
    - ``empty``: a list with R = 0 is left out of recall, AP, NDCG, MRR and AUC
      (``skip``, counted as ``lists_without_relevant``) or scores 0 (``zero``).
    - ``duplicates``: an item twice in one list is an ``error`` (trec_eval) or
      counted once at its first position with a warning (``dedupe``).
    """

    ap_denominator: ApDenominator = "R"
    gain: Gain = "linear"
    empty: Empty = "skip"
    duplicates: Duplicates = "error"

    def __post_init__(self) -> None:
        _check_choice("AP denominator", self.ap_denominator, AP_DENOMINATORS)
        _check_choice("gain", self.gain, GAINS)
        _check_choice("empty-list", self.empty, EMPTY)
        _check_choice("duplicates", self.duplicates, DUPLICATES)

    def to_dict(self) -> dict[str, str]:
        return {
            "ap_denominator": self.ap_denominator,
            "gain": self.gain,
            "empty": self.empty,
            "duplicates": self.duplicates,
        }


@dataclass(frozen=True)
class MetricSpec:
    """One metric at one cutoff under one set of conventions.

    ``k`` is ``None`` for metrics over the whole list (``mrr``, ``ndcg``, ``auc``)
    and for rating metrics. ``definition`` is the metric's definition, resolved
    by the registry; it does not take part in equality (the name stands for it).
    """

    name: str
    k: int | None = None
    conventions: Conventions = field(default_factory=Conventions)
    definition: MetricDefinition = field(kw_only=True, compare=False, repr=False)

    @property
    def label(self) -> str:
        """The name shown to users: ``ndcg@10``, ``mrr``, ``rmse``."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def column(self) -> str:
        """A SQL-safe column name: ``ndcg_10``, ``mrr``."""
        return self.name if self.k is None else f"{self.name}_{self.k}"

    @property
    def kind(self) -> str:
        """``ranking`` (per list), ``beyond`` (beyond accuracy, per group) or ``rating``."""
        return self.definition.kind

    @property
    def convention(self) -> dict[str, str]:
        """The conventions that apply to this metric, for printing with its result."""
        d = self.definition
        out: dict[str, str] = {}
        for option in d.options:
            out[option] = str(getattr(self.conventions, option))
        if d.kind == "ranking":
            out["cutoff"] = "whole list" if self.k is None else str(self.k)
            out["average"] = "per list, then per user, then over users"
        return out
