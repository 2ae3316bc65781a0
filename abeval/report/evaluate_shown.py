"""The evaluation as the API returns it (:mod:`abeval.report.notebook` for the
others): kept apart so that an evaluation loads neither numpy nor the store.

>>> ShownEvaluation.SHOWN[:3]
('model', 'metric', 'value')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from abeval.analysis.evaluate.results import EvaluationResult
from abeval.report import frames
from abeval.report.shown import Shown


@dataclass(frozen=True, repr=False)
class ShownEvaluation(Shown, EvaluationResult):
    """An EvaluationResult: one row per model × metric in ``to_frame()``, one per
    model × user with ``to_frame(per_user=True)`` (when evaluated with ``per_user``).

    >>> result = abeval.evaluate("truth.csv", {"a": "a.csv", "b": "b.csv"}, per_user="u.csv")
    >>> result.to_frame(per_user=True).groupby("model")["ndcg@10"].mean()
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "model",
        "metric",
        "value",
        "std_error",
        "difference",
        "ci_low",
        "ci_high",
        "p_t_holm",
    )

    def rows(self) -> list[frames.Row]:
        return frames.evaluation_rows(self.to_dict())

    def to_frame(self, per_user: bool = False) -> Any:
        """One row per model × metric; ``per_user=True``: one per model × user, read
        from the evaluation's ``per_user`` file.

        >>> result.to_frame().pivot(index="metric", columns="model", values="value")
        """
        if per_user:
            return frames.per_user_frame(self.per_user_path)
        return frames.frame(self.rows())

    def headline(self) -> str:
        names = {m.metric for m in self.metrics}
        return (
            f"EvaluationResult: {len(self.models)} models ({', '.join(self.models)}; "
            f"baseline {self.models[0]}) × {len(names)} metrics"
        )
