"""``abeval evaluate``: offline evaluation of recommendation files against held-out truth.

Every input file (CSV, CSV.gz, Parquet, JSONL) is read by DuckDB itself
(``read_csv``, ``read_parquet``, ``read_json``) into an in-memory database; the
metrics are computed there by the same SQL kernels as log replay
(:mod:`abeval.metrics.kernel`, :mod:`abeval.metrics.beyond`). No user's list
passes through Python; only per-user values come back for the paired model
comparison (:mod:`abeval.stats.paired`).

Conventions (docs/metrics.md#evaluate-from-files, docs/metrics.md#ranking-conventions):

- a recommendation file has ``user_id``, ``item_id`` and ``rank`` or ``score``;
  ranks are recomputed 1..n per user by ``rank`` ascending, else ``score``
  descending, ties broken by item id descending (trec_eval);
- the truth file has ``user_id``, ``item_id`` and optionally ``relevance`` or
  ``rating`` (the grade; 1 when absent); an item is relevant when its grade is
  > 0, or ≥ ``min_relevance`` when given;
- an item twice in one user's list is an error, or (``duplicates=dedupe``)
  counted once at its best position with a warning;
- users in a recommendation file without any truth row are counted
  (``users_without_truth``) and not evaluated; truth users without a list are
  counted (``truth_users_without_recommendations``) and, with
  ``missing=zero``, score 0 in every ranking metric (trec_eval ``-c``).

The modules, in the order a run uses them:

- :mod:`~abeval.analysis.evaluate.run`: :func:`evaluate`, the run itself;
- :mod:`~abeval.analysis.evaluate.reader`: one file into a table, with one-line errors;
- :mod:`~abeval.analysis.evaluate.inputs`: the columns of each input role and the
  tables prepared from them;
- :mod:`~abeval.analysis.evaluate.tables`: ranked lists, coverage, per-user values,
  the ranking results, the paired comparison and the per-user file;
- :mod:`~abeval.analysis.evaluate.beyond`: beyond-accuracy metrics;
- :mod:`~abeval.analysis.evaluate.ratings`: RMSE and MAE;
- :mod:`~abeval.analysis.evaluate.results`: the result types presenters read
  (text: :mod:`abeval.report.evaluate_text`; HTML: :mod:`abeval.report.evaluate_html`);
- :mod:`~abeval.analysis.evaluate.record`: ``--experiment X``, the evaluation
  recorded against an experiment's arms (docs/metrics.md#recorded-evaluations).

Models are named after their files, or by a mapping of name to file
(``-r NAME=FILE``, docs/usage.md#named-models).
"""

from abeval.analysis.evaluate.results import (
    EvaluationResult,
    FileSummary,
    PairedComparison,
    RatingResult,
    UserCoverage,
)
from abeval.analysis.evaluate.run import evaluate

__all__ = [
    "EvaluationResult",
    "FileSummary",
    "PairedComparison",
    "RatingResult",
    "UserCoverage",
    "evaluate",
]
