"""Each metric's prior learned from the store's other experiments, for
``abeval report --prior history`` (:mod:`abeval.analysis.history_prior` says
how; this module reads the store, apart so that the report's model does not
import the program)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.analysis.history_prior import LearnedPrior, learned_prior
from abeval.stats.program import MIN_EXPERIMENTS

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.analysis.report_model import ReportOptions
    from abeval.store.database import Database


def learned_priors(
    store: Database,
    experiment: str,
    options: ReportOptions,
    catalog: Catalog,
    metrics: tuple[str, ...],
    min_experiments: int | None = None,
) -> tuple[LearnedPrior, ...]:
    """The prior of each of ``metrics`` (the report's primary metrics) and of every
    other metric the program has lifts of, learned from the store's experiments
    other than ``experiment``, each read as ``abeval program`` reads it under
    ``options``; a metric needs ``min_experiments`` of them (default
    :data:`~abeval.stats.program.MIN_EXPERIMENTS`)."""
    from abeval.analysis.program_store import store_program
    from abeval.errors import InputError

    if min_experiments is None:
        min_experiments = MIN_EXPERIMENTS

    try:
        rows = store_program(store, options, catalog, min_experiments=min_experiments).lifts
    except InputError:  # fewer than 2 experiments with a lift: none to learn from
        rows = ()
    out = []
    for metric in dict.fromkeys((*metrics, *(r.metric for r in rows))):
        of = [r for r in rows if r.metric == metric and r.experiment != experiment]
        lifts, ses = [r.lift for r in of], [r.se for r in of]
        out.append(learned_prior(metric, lifts, ses, min_experiments))
    return tuple(out)
