"""Rating metrics of ``abeval evaluate`` (RMSE, MAE): each predictions file against
the truth ratings, over the (user, item) pairs both have."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from abeval.analysis.evaluate.results import RatingResult
from abeval.analysis.evaluate.sql import count, scalar
from abeval.errors import InputError
from abeval.metrics import MetricSpec

if TYPE_CHECKING:
    import duckdb


def rating_results(
    con: duckdb.DuckDBPyConnection, specs: Sequence[MetricSpec], names: Sequence[str]
) -> list[RatingResult]:
    """One result per predictions file (``pred_i``, named ``names[i]``) per metric."""
    cols = {r[0] for r in con.execute("DESCRIBE t_raw").fetchall()}
    if "grade" not in cols:
        raise InputError(
            "the truth file has no rating column; "
            "RMSE and MAE need columns user_id, item_id, rating"
        )
    out: list[RatingResult] = []
    truth_pairs = count(con, "truth")
    for i, name in enumerate(names):
        aggs = ", ".join(f"{s.definition.rating_sql} AS m{j}" for j, s in enumerate(specs))
        row = con.execute(
            f"SELECT COUNT(*) AS n, {aggs} FROM (SELECT p.prediction, t.grade AS rating "
            f"FROM pred_{i} p JOIN truth t ON t.user_id = p.user_id AND t.item_id = p.item_id) x"
        ).fetchone()
        assert row is not None
        without = scalar(
            con,
            f"SELECT COUNT(*) FROM pred_{i} p ANTI JOIN truth t "
            "ON t.user_id = p.user_id AND t.item_id = p.item_id",
        )
        for j, spec in enumerate(specs):
            value = None if row[1 + j] is None else float(row[1 + j])
            out.append(
                RatingResult(
                    metric=spec.label,
                    model=name,
                    value=value,
                    pairs_predicted=int(row[0]),
                    truth_pairs=truth_pairs,
                    predictions_without_truth=without,
                    status="ok" if value is not None else "undefined",
                    message="" if value is not None else "no prediction matches a truth pair",
                )
            )
    return out
