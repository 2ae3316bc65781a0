"""Mean absolute error of rating predictions.

    mae = mean over (user, item) pairs in both files of |prediction − rating|

Pairs of the truth without a prediction are not imputed: the result reports
how many truth pairs were predicted (``pairs_predicted`` of ``truth_pairs``).

Reference: Herlocker et al., "Evaluating collaborative filtering recommender
systems", ACM TOIS 22(1), 2004, §3.2.
"""

from __future__ import annotations

from abeval.metrics.base import MetricDefinition

SQL = "AVG(ABS(prediction - rating))"

DEFINITION = MetricDefinition(
    name="mae",
    kind="rating",
    cutoff="none",
    title="MAE",
    formula="mean |prediction − rating| over pairs in both files",
    reference="Herlocker et al. 2004 (ACM TOIS 22(1)), §3.2",
    doc=__doc__ or "",
    counted="pairs_predicted",
    rating_sql=SQL,
    lower_is_better=True,
    aliases=("mean_absolute_error",),
)
