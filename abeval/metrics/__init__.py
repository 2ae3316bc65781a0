"""Offline metric definitions and their SQL kernels (docs/metrics.md#offline-metrics).

One module per metric, each with its formula and reference in the docstring
and one :class:`~abeval.metrics.base.MetricDefinition`. The registry parses
names (``ndcg@10``) into :class:`MetricSpec`; :mod:`abeval.metrics.kernel`
(ranking metrics) and :mod:`abeval.metrics.beyond` (beyond accuracy) turn specs
into SQL that runs inside DuckDB or PostgreSQL and returns per-user sufficient
statistics; results are :class:`OfflineMetricResult`.
"""

from abeval.metrics.base import BeyondInputs, MetricDefinition
from abeval.metrics.beyond import BeyondQuery, beyond_query
from abeval.metrics.kernel import RankingQuery, ranking_query
from abeval.metrics.registry import (
    DEFINITIONS,
    default_ranking_metrics,
    definition,
    known_names,
    parse_metric,
    parse_offline_metrics,
)
from abeval.metrics.results import OfflineMetricResult
from abeval.metrics.spec import Conventions, MetricSpec

__all__ = [
    "DEFINITIONS",
    "BeyondInputs",
    "BeyondQuery",
    "Conventions",
    "MetricDefinition",
    "MetricSpec",
    "OfflineMetricResult",
    "RankingQuery",
    "beyond_query",
    "default_ranking_metrics",
    "definition",
    "known_names",
    "parse_metric",
    "parse_offline_metrics",
    "ranking_query",
]
