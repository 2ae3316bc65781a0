"""The frozen results of ``abeval evaluate``: what its presenters read.

:class:`EvaluationResult` holds everything one run computed: a
:class:`FileSummary` per input file, a :class:`UserCoverage` per model (how its users
and the truth users overlap), the metric results
(:class:`~abeval.metrics.results.OfflineMetricResult`, one per metric per model), a
:class:`PairedComparison` per (metric, model) against the baseline, and a
:class:`RatingResult` per rating metric per predictions file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from abeval.metrics.results import OfflineMetricResult, finite
from abeval.stats.paired import PairedComparison


@dataclass(frozen=True)
class FileSummary:
    """What was read from one input file."""

    role: str  # recommendations | predictions | truth | items | history
    path: str
    name: str  # the model name (recommendations, predictions), else the role
    rows: int
    users: int = 0
    duplicates_removed: int = 0
    columns: Mapping[str, str] = field(default_factory=dict)  # abeval name -> file column

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "path": self.path,
            "name": self.name,
            "rows": self.rows,
            "users": self.users,
            "duplicates_removed": self.duplicates_removed,
            "columns": dict(self.columns),
        }


@dataclass(frozen=True)
class UserCoverage:
    """How the users of one model's file and of the truth file overlap."""

    model: str
    users_in_recommendations: int
    users_evaluated: int
    users_without_truth: int
    truth_users: int
    truth_users_without_recommendations: int
    truth_users_without_relevant: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RatingResult:
    """RMSE or MAE of one predictions file against the truth ratings."""

    metric: str
    model: str
    value: float | None
    pairs_predicted: int
    truth_pairs: int
    predictions_without_truth: int
    status: str = "ok"
    message: str = ""

    @property
    def coverage(self) -> float | None:
        return self.pairs_predicted / self.truth_pairs if self.truth_pairs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "model": self.model,
            "value": finite(self.value),
            "pairs_predicted": self.pairs_predicted,
            "truth_pairs": self.truth_pairs,
            "coverage": finite(self.coverage),
            "predictions_without_truth": self.predictions_without_truth,
            "status": self.status,
            **({"message": self.message} if self.message else {}),
        }


@dataclass(frozen=True)
class Recorded:
    """Where ``abeval evaluate --experiment X`` recorded the evaluation
    (docs/metrics.md#recorded-evaluations): the store's ``offline_evaluations`` rows
    of ``evaluation_id``, with ``control``'s model as the baseline."""

    experiment: str
    evaluation_id: str
    control: str
    recorded_at: str  # ISO 8601, UTC
    rows: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class EvaluationResult:
    """Everything ``abeval evaluate`` computed: the one object its presenters read."""

    models: tuple[str, ...]
    files: tuple[FileSummary, ...]
    coverage: tuple[UserCoverage, ...]
    metrics: tuple[OfflineMetricResult, ...]
    comparisons: tuple[PairedComparison, ...]
    ratings: tuple[RatingResult, ...]
    conventions: Mapping[str, str]
    warnings: tuple[str, ...] = ()
    per_user_path: str | None = None
    recorded: Recorded | None = None  # with --experiment

    def metric(self, name: str, model: str | None = None) -> OfflineMetricResult:
        """The result of metric ``name`` (a label such as ``ndcg@10``) for ``model``.

        >>> result.metric("ndcg@10", "bm25").value
        """
        model = model or self.models[0]
        for m in self.metrics:
            if m.metric == name and m.group == model:
                return m
        raise KeyError((name, model))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ``abeval evaluate --format json`` writes.

        >>> json.dumps(result.to_dict())
        """
        return {
            "models": list(self.models),
            "files": [f.to_dict() for f in self.files],
            "coverage": [c.to_dict() for c in self.coverage],
            "conventions": dict(self.conventions),
            "metrics": [m.to_dict() for m in self.metrics],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "ratings": [r.to_dict() for r in self.ratings],
            "warnings": list(self.warnings),
            "per_user_path": self.per_user_path,
            "recorded": self.recorded.to_dict() if self.recorded else None,
        }
