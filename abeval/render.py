"""The presenters: each result of :mod:`abeval.api` as text, JSON or an HTML page.

The results hold codes and numbers; these functions write the sentences and the
pages, exactly what the CLI prints (it renders through them and nothing else).
``text(result)``, ``html(result)`` and ``json_document(result)`` choose the
presenter by the result's type (a report, an evaluation, an agreement board, a
forecast); ``page_path(result)`` is the page's default place. :func:`write`
writes a page or a document whole, or not at all. Each presenter is imported on
first use, so that importing this module costs nothing. See docs/python.md.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.analysis.experiment_config import ExperimentConfig
    from abeval.analysis.report_model import GuardrailPower
    from abeval.store.source_mapping import Mapping

__all__ = [
    "config_lines",
    "correction_name",
    "days_text",
    "guardrail_power_line",
    "html",
    "json_document",
    "mapping_dict",
    "mapping_text",
    "metric_label",
    "page_path",
    "recordable_options",
    "text",
    "write",
]

#: Each result type (by class name) → the modules of its text, HTML and JSON presenters.
_PRESENTERS: dict[str, tuple[str, str, str | None]] = {
    "ExperimentReport": ("abeval.report.text", "abeval.report.html", None),
    "ShownReport": ("abeval.report.text", "abeval.report.html", None),
    "EvaluationResult": ("abeval.report.evaluate_text", "abeval.report.evaluate_html", None),
    "AgreementBoard": ("abeval.report.agreement_text", "abeval.report.agreement_html", None),
    "ForecastReport": (
        "abeval.report.forecast_text",
        "abeval.report.forecast_html",
        "abeval.report.forecast_json",
    ),
}


def _presenters(result: object) -> tuple[str, str, str | None]:
    for cls in type(result).__mro__:
        found = _PRESENTERS.get(cls.__name__)
        if found is not None:
            return found
    raise TypeError(f"no presenter for {type(result).__name__}")


def text(result: Any) -> str:
    """The result as the CLI's text (``--format text``)."""
    module = importlib.import_module(_presenters(result)[0])
    return str(module.render_text(result))


def html(result: Any, **options: Any) -> str:
    """The result's HTML page (``--format html``); an evaluation's page takes the
    ``alpha``, ``resamples`` and ``seed`` it was compared under."""
    module = importlib.import_module(_presenters(result)[1])
    return str(module.render_html(result, **options))


def json_document(result: Any) -> Any:
    """The result as the JSON document ``--format json`` writes (a dict or list,
    for :func:`json.dumps`)."""
    name = _presenters(result)[2]
    if name is None:
        return result.to_dict()
    return importlib.import_module(name).forecast_json(result)


def page_path(result: Any) -> Path:
    """Where the CLI writes the result's page when ``-o`` is not given
    (``reports/<experiment>.html`` for a report)."""
    module = importlib.import_module(_presenters(result)[1])
    if hasattr(module, "default_path"):
        return Path(module.default_path(result.experiment))
    return Path(module.DEFAULT_PATH)


def write(path: str | Path, text: str, *, make_folders: bool = False) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file renamed);
    the folder must exist unless ``make_folders``. A place that cannot be written
    raises an :class:`~abeval.errors.AbevalError` naming it."""
    from abeval.files import write_atomic

    write_atomic(path, text, make_folders=make_folders)


def guardrail_power_line(g: GuardrailPower) -> str:
    """One guardrail's non-inferiority plan as a sentence (``abeval power``)."""
    from abeval.report.decision_text import guardrail_power_line as line

    return line(g)


def correction_name(code: str) -> str:
    """A multiple-testing correction's name (``holm`` → ``Holm``)."""
    from abeval.report.text import CORRECTION_NAMES

    return CORRECTION_NAMES.get(code, code)


def metric_label(metric: str) -> str:
    """A built-in online metric's label (``ctr`` → ``CTR``)."""
    from abeval.analysis.online_metrics import METRICS

    return METRICS[metric].label


def days_text(days: float, users_per_day: float, more: str = "") -> str:
    """How long a test takes at this traffic; beyond a year, not feasible."""
    from abeval.analysis.planning import FEASIBLE_DAYS

    at = f"{more}days at {users_per_day:,.0f} users per day"
    if days > FEASIBLE_DAYS:
        return f"not feasible at this traffic ({days:,.0f} {at})"
    return f"about {days:.1f} {at}"


def mapping_text(mapping: Mapping) -> str:
    """A source's mapping in one line (``abeval source list``)."""
    from abeval.store.source_mapping import describe_mapping

    return describe_mapping(mapping)


def mapping_dict(mapping: Mapping) -> dict[str, Any]:
    """A source's mapping as JSON (``abeval source list -f json``)."""
    from abeval.store.source_mapping import as_dict

    return as_dict(mapping)


def recordable_options() -> dict[str, str]:
    """The options ``abeval experiment set`` records: name → the option's flag."""
    from abeval.analysis.experiment_config import OPTIONS

    return dict(OPTIONS)


def config_lines(config: ExperimentConfig) -> list[str]:
    """One ``name: value`` line per recorded option of ``config``."""
    from abeval.analysis.experiment_config import OPTIONS, describe

    return [
        f"{OPTIONS[name].lstrip('-')}: {describe(name, config)}"
        for name in OPTIONS
        if getattr(config, name) is not None
    ]
