"""The presenters: each result of :mod:`abeval.api` as text, JSON or an HTML page.

The results hold codes and numbers; these functions write the sentences and the
pages, exactly what the CLI prints (it renders through them and nothing else).
``text(result)``, ``html(result)`` and ``json_document(result)`` choose the
presenter by the result's type (a report, an evaluation, an agreement board, a
forecast); ``page_path(result)`` is the page's default place. :func:`write`
writes a page or a document whole, or not at all. Each presenter is imported on
first use, so that importing this module costs nothing. The other commands'
lines (``ingest_lines``, ``settings_lines``, ``plan_lines`` ...) are written by
:mod:`abeval.report.experiment_lines`, :mod:`abeval.report.store_lines` and
:mod:`abeval.report.plan_lines`, and offered here. See docs/python.md.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.formatting import days_text
from abeval.report.experiment_lines import (
    config_lines,
    experiments_lines,
    outcome_line,
    recordable_options,
    settings_document,
    settings_line,
    settings_lines,
    targets_line,
)
from abeval.report.plan_lines import correction_name, guardrail_power_line, plan_lines, power_lines
from abeval.report.store_lines import (
    ingest_lines,
    mapping_dict,
    mapping_text,
    metrics_lines,
    source_check_lines,
    sources_document,
    sources_lines,
)

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard
    from abeval.analysis.evaluate.results import EvaluationResult
    from abeval.analysis.experiment_record import ExperimentRecord
    from abeval.analysis.forecast import ForecastReport
    from abeval.analysis.program import ProgramReport
    from abeval.analysis.program_store import StoreProgram
    from abeval.analysis.report_model import ExperimentReport

__all__ = [
    "config_lines",
    "correction_name",
    "days_text",
    "experiments_lines",
    "guardrail_power_line",
    "html",
    "ingest_lines",
    "json_document",
    "mapping_dict",
    "mapping_text",
    "metrics_lines",
    "outcome_line",
    "page_path",
    "plan_lines",
    "power_lines",
    "recordable_options",
    "settings_document",
    "settings_line",
    "settings_lines",
    "source_check_lines",
    "sources_document",
    "sources_lines",
    "targets_line",
    "text",
    "write",
]


@dataclass(frozen=True)
class _Presenters:
    """One result type's presenters, each importing its module when called."""

    text: Callable[..., str]
    html: Callable[..., str]
    page: Callable[[Any], Path]
    json: Callable[[Any], Any] = operator.methodcaller("to_dict")


def _report_text(report: ExperimentReport, *, verbose: bool = False) -> str:
    from abeval.report.text import render_text

    _flag("verbose", verbose)
    return render_text(report, verbose=verbose)


def _report_html(report: ExperimentReport, *, show_store: bool = False) -> str:
    from abeval.report.html import render_html

    _flag("show_store", show_store)
    return render_html(report, show_store=show_store)


def _flag(parameter: str, value: bool) -> None:
    """A presenter's on/off option (``show_store``, ``verbose``) is True or False: an
    :class:`~abeval.errors.OptionError` naming it otherwise, as the API's checks
    (:mod:`abeval.api.options`, which this layer does not import) raise."""
    from abeval.errors import OptionError

    if not isinstance(value, bool):
        raise OptionError(parameter, value, "must be True or False", allowed=(True, False))


def _report_page(report: ExperimentReport) -> Path:
    from abeval.report.html import default_path

    return Path(default_path(report.experiment))


def _evaluation_text(result: EvaluationResult) -> str:
    from abeval.report.evaluate_text import render_text

    return render_text(result)


def _evaluation_html(result: EvaluationResult, **options: Any) -> str:
    from abeval.report.evaluate_html import render_html

    return render_html(result, **options)


def _evaluation_page(result: EvaluationResult) -> Path:
    from abeval.report.evaluate_html import DEFAULT_PATH

    return DEFAULT_PATH


def _forecast_text(report: ForecastReport) -> str:
    from abeval.report.forecast_text import render_text

    return render_text(report)


def _forecast_html(report: ForecastReport, *, show_store: bool = False) -> str:
    from abeval.report.forecast_html import render_html

    _flag("show_store", show_store)
    return render_html(report, show_store=show_store)


def _forecast_page(report: ForecastReport) -> Path:
    from abeval.report.forecast_html import DEFAULT_PATH

    return DEFAULT_PATH


def _forecast_json(report: ForecastReport) -> Any:
    from abeval.report.forecast_json import forecast_json

    return forecast_json(report)


def _board_text(board: AgreementBoard) -> str:
    from abeval.report.agreement_text import render_text

    return render_text(board)


def _board_html(board: AgreementBoard, *, show_store: bool = False) -> str:
    from abeval.report.agreement_html import render_html

    _flag("show_store", show_store)
    return render_html(board, show_store=show_store)


def _board_page(board: AgreementBoard) -> Path:
    from abeval.report.agreement_html import DEFAULT_PATH

    return DEFAULT_PATH


def _program_text(report: ProgramReport) -> str:
    from abeval.report.program_text import program_text

    return program_text(report)


def _program_json(report: ProgramReport) -> Any:
    from abeval.report.program_json import program_document

    return program_document(report)


def _no_program_page(report: ProgramReport, **options: Any) -> Any:
    from abeval.errors import OptionError

    raise OptionError("format", "html", "a program has no HTML page yet: choose text or json")


def _store_program_text(program: StoreProgram) -> str:
    from abeval.report.program_store import store_program_text

    return store_program_text(program)


def _store_program_html(program: StoreProgram, **options: Any) -> str:
    from abeval.report.program_html import render_html

    _flag("show_store", options.get("show_store", False))
    return render_html(program, **options)


def _store_program_page(program: StoreProgram) -> Path:
    from abeval.report.program_html import DEFAULT_PATH

    return DEFAULT_PATH


def _store_program_json(program: StoreProgram) -> Any:
    from abeval.report.program_store import store_program_document

    return store_program_document(program)


def _record_text(record: ExperimentRecord) -> str:
    from abeval.report.experiment_text import record_lines

    lines = settings_lines(record.experiment, record.settings, record.config)
    return "\n".join([*lines, *record_lines(record)]) + "\n"


def _no_record_page(record: ExperimentRecord, **options: Any) -> Any:
    from abeval.errors import OptionError

    raise OptionError("format", "html", "what is recorded has no HTML page: choose text or json")


_RECORD = _Presenters(_record_text, _no_record_page, _no_record_page)
_REPORT = _Presenters(_report_text, _report_html, _report_page)
_EVALUATION = _Presenters(_evaluation_text, _evaluation_html, _evaluation_page)
_FORECAST = _Presenters(_forecast_text, _forecast_html, _forecast_page, _forecast_json)
_BOARD = _Presenters(_board_text, _board_html, _board_page)
_PROGRAM = _Presenters(_program_text, _no_program_page, _no_program_page, _program_json)
_STORE_PROGRAM = _Presenters(
    _store_program_text, _store_program_html, _store_program_page, _store_program_json
)


def _presenters(result: object) -> _Presenters:
    """The presenters of ``result``'s type, or of the type it derives from (the
    notebook's report is a report). The types are tried in this order, and each is
    imported only when the ones before it did not match: the type of the result is
    loaded already, so a report never loads the evaluation's modules, and an
    evaluation not the agreement board's."""
    import sys

    # what is recorded for an experiment: its module is loaded when one exists
    record = sys.modules.get("abeval.analysis.experiment_record")
    if record is not None and isinstance(result, record.ExperimentRecord):
        return _RECORD
    from abeval.analysis.report_model import ExperimentReport

    if isinstance(result, ExperimentReport):
        return _REPORT
    from abeval.analysis.evaluate.results import EvaluationResult

    if isinstance(result, EvaluationResult):
        return _EVALUATION
    from abeval.analysis.forecast import ForecastReport

    if isinstance(result, ForecastReport):
        return _FORECAST
    from abeval.analysis.agreement import AgreementBoard

    if isinstance(result, AgreementBoard):
        return _BOARD
    from abeval.analysis.program import ProgramReport

    if isinstance(result, ProgramReport):
        from abeval.analysis.program_store import StoreProgram

        return _STORE_PROGRAM if isinstance(result, StoreProgram) else _PROGRAM
    raise TypeError(f"no presenter for {type(result).__name__}")


def text(result: Any, **options: Any) -> str:
    """The result as the CLI's text (``--format text``); a report's takes
    ``verbose=True`` (``--verbose``) for its long diagnostics."""
    return _presenters(result).text(result, **options)


def html(result: Any, **options: Any) -> str:
    """The result's HTML page (``--format html``); an evaluation's page takes the
    ``alpha``, ``resamples`` and ``seed`` it was compared under. The pages of a
    report, an agreement board and a forecast name the store by its kind (``DuckDB
    store``) unless ``show_store=True`` (``--show-store``): a page is shared."""
    return _presenters(result).html(result, **options)


def json_document(result: Any) -> Any:
    """The result as the JSON document ``--format json`` writes (a dict or list,
    for :func:`json.dumps`)."""
    return _presenters(result).json(result)


def page_path(result: Any) -> Path:
    """Where the CLI writes the result's page when ``-o`` is not given
    (``reports/<experiment>.html`` for a report)."""
    return _presenters(result).page(result)


def write(path: str | Path, text: str, *, make_folders: bool = False) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file renamed);
    the folder must exist unless ``make_folders``. A place that cannot be written
    raises an :class:`~abeval.errors.AbevalError` naming it."""
    from abeval.files import write_atomic

    write_atomic(path, text, make_folders=make_folders)
