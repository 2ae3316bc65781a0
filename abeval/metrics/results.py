"""Frozen results of offline metrics: the one thing presenters read.

A :class:`OfflineMetricResult` is one metric for one group (an arm in replay, a model in
``evaluate``): its value, the per-user :class:`~abeval.stats.sufficient.MeanStats`
where the metric is a mean over users (so arms can be compared with the same
tests as online metrics), the conventions it was computed under, how many users
and lists it covers, and what was left out and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abeval.stats.sufficient import MeanStats


def finite(x: float | None) -> float | None:
    """``x`` if it is a finite number, else None (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class OfflineMetricResult:
    """One metric for one group.

    - ``value``: the metric (for per-user metrics, the mean over users); None when
      undefined (``status`` says why).
    - ``stats``: per-user sufficient statistics (ranking metrics, diversity), else None.
    - ``users``: users with a value; ``lists``: lists (requests, or users' lists)
      that entered the average.
    - ``left_out``: counts of what was left out, by reason
      (``lists_without_relevant``, ``lists_without_pairs``, ``users_without_value``,
      ``items_outside_catalogue``, ``slots_without_popularity`` ...).
    - ``counts``: other counts that describe the value (``catalogue_items``,
      ``slots``, ``pairs_predicted`` ...).
    - ``convention``: the conventions it was computed under (gain, AP denominator,
      empty lists, cutoff, tie rule, averaging).
    """

    metric: str
    group: str
    value: float | None
    stats: MeanStats | None = None
    users: int = 0
    lists: int = 0
    left_out: Mapping[str, int] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    convention: Mapping[str, str] = field(default_factory=dict)
    status: str = "ok"
    message: str = ""

    @classmethod
    def of_stats(
        cls,
        *,
        metric: str,
        group: str,
        stats: MeanStats,
        lists: int,
        left_out: Mapping[str, int],
        convention: Mapping[str, str],
        counts: Mapping[str, int] | None = None,
    ) -> OfflineMetricResult:
        if stats.n == 0:
            return cls(
                metric=metric,
                group=group,
                value=None,
                stats=stats,
                users=0,
                lists=lists,
                left_out=dict(left_out),
                counts=dict(counts or {}),
                convention=dict(convention),
                status="undefined",
                message="no user has a list that counts for this metric",
            )
        return cls(
            metric=metric,
            group=group,
            value=stats.mean,
            stats=stats,
            users=stats.n,
            lists=lists,
            left_out=dict(left_out),
            counts=dict(counts or {}),
            convention=dict(convention),
        )

    @property
    def std_error(self) -> float | None:
        """Standard error of the mean over users (None without per-user stats)."""
        if self.stats is None or self.stats.n < 2:
            return None
        return math.sqrt(self.stats.variance / self.stats.n)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "group": self.group,
            "value": finite(self.value),
            "std_error": finite(self.std_error),
            "users": self.users,
            "lists": self.lists,
            "left_out": dict(self.left_out),
            "counts": dict(self.counts),
            "convention": dict(self.convention),
            "status": self.status,
        }
        if self.stats is not None:
            out["stats"] = {"n": self.stats.n, "sum": self.stats.sum, "ss": self.stats.ss}
        if self.message:
            out["message"] = self.message
        return out


def complete(
    results: Sequence[OfflineMetricResult],
    labels: Sequence[tuple[str, Mapping[str, str]]],
    groups: Sequence[str],
    extra: Mapping[str, str],
    message: str,
) -> list[OfflineMetricResult]:
    """One result per (metric, group), metric-major in the order asked: a group
    the engine returned nothing for gets an undefined result saying ``message``,
    never silence.

    ``labels`` holds each metric's label and conventions; ``extra`` conventions
    are added to those of the results made here."""
    by = {(r.metric, r.group): r for r in results}
    out: list[OfflineMetricResult] = []
    for label, convention in labels:
        for group in groups:
            found = by.get((label, group))
            if found is None:
                found = OfflineMetricResult(
                    metric=label,
                    group=group,
                    value=None,
                    convention={**convention, **extra},
                    status="undefined",
                    message=message,
                )
            out.append(found)
    return out
