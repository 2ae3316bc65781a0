"""The Python API: what a notebook or a script calls, and what the CLI calls.

``abeval.open(db)`` gives a :class:`Store` (a context manager) whose methods
load events and analyse experiments; ``abeval.evaluate`` scores recommendation
runs against held-out truth. Options are keyword arguments named and defaulted
as the CLI's options are (``primary``, ``k``, ``alpha``...); an invalid value
raises :class:`~abeval.errors.OptionError` (the parameter, the value, the values
allowed), a bad input :class:`~abeval.errors.InputError`. Nothing here prints
or exits. See docs/python.md.

One module per family of commands, each name importable from here:

- :mod:`~abeval.api.store`: ``open``, the :class:`Store` (ingest, experiments,
  rejects, migrate);
- :mod:`~abeval.api.reporting`: ``Store.report`` and ``report_options``;
- :mod:`~abeval.api.offline`: ``evaluate``, ``Store.record_evaluation``,
  ``named_models``, ``model_argument``;
- :mod:`~abeval.api.across`: the agreement board and the forecast
  (``Store.agreement``, ``Store.forecast``, ``agreement_history``,
  ``forecast_options``, ``forecast_evidence``, ``forecast_history``);
- :mod:`~abeval.api.configuration`: metrics, sources and experiment settings
  (``source_mapping``, ``experiment_config``);
- :mod:`~abeval.api.planning`: ``Store.power``, ``Store.plan`` and ``plan_power``;
- :mod:`~abeval.api.programs`: ``program`` (a program of experiments from a history;
  ``Store.program``: from the store);
- :mod:`~abeval.api.options` (the checks and the CLI's parsers: ``cutoffs``,
  ``metric_names``, ``parse_bound``) and :mod:`~abeval.api.opened` (what the
  parts of a store share).

Every module imports its library layers inside its functions, so that importing
the API (and starting the CLI) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.api.across import MAX_RESAMPLES as MAX_RESAMPLES
from abeval.api.across import MIN_RESAMPLES as MIN_RESAMPLES
from abeval.api.across import (
    agreement_history,
    agreement_inputs,
    agreement_numbers,
    forecast_evidence,
    forecast_history,
    forecast_inputs,
    forecast_options,
)
from abeval.api.configuration import (
    checked_settings,
    experiment_config,
    outcome_options,
    set_options,
    source_mapping,
    unset_options,
)
from abeval.api.offline import evaluate, model_argument, named_models
from abeval.api.options import Names as Names
from abeval.api.options import cutoffs, metric_names, parse_bound
from abeval.api.planning import plan_power, power_inputs
from abeval.api.programs import program, program_filters, program_inputs
from abeval.api.reporting import report_options
from abeval.api.store import Experiments, Store, ingest_options, open, rejects_options

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard as AgreementBoard
    from abeval.analysis.experiment_config import ExperimentConfig as ExperimentConfig
    from abeval.store.experiments import ExperimentSettings as ExperimentSettings
    from abeval.store.experiments import TargetsRecorded as TargetsRecorded
    from abeval.store.ingest import IngestSummary as IngestSummary
    from abeval.store.sources import SourceCheck as SourceCheck

__all__ = [
    "Experiments",
    "Store",
    "agreement_history",
    "agreement_inputs",
    "agreement_numbers",
    "checked_settings",
    "cutoffs",
    "evaluate",
    "experiment_config",
    "forecast_evidence",
    "forecast_history",
    "forecast_inputs",
    "forecast_options",
    "ingest_options",
    "metric_names",
    "model_argument",
    "named_models",
    "open",
    "outcome_options",
    "parse_bound",
    "plan_power",
    "power_inputs",
    "program",
    "program_filters",
    "program_inputs",
    "rejects_options",
    "report_options",
    "set_options",
    "source_mapping",
    "unset_options",
]
