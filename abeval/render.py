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

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.formatting import days_text

if TYPE_CHECKING:
    from abeval.analysis.agreement import AgreementBoard
    from abeval.analysis.evaluate.results import EvaluationResult
    from abeval.analysis.experiment_config import ExperimentConfig
    from abeval.analysis.forecast import ForecastReport
    from abeval.analysis.metric_records import MetricRow
    from abeval.analysis.planning import Plan
    from abeval.analysis.program import ProgramReport
    from abeval.analysis.report_model import ExperimentReport, GuardrailPower
    from abeval.stats import PowerResult
    from abeval.store.experiments import ExperimentSettings, ExperimentSummary, TargetsRecorded
    from abeval.store.ingest import IngestSummary
    from abeval.store.source_mapping import Mapping
    from abeval.store.sources import Source, SourceCheck

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


_REPORT = _Presenters(_report_text, _report_html, _report_page)
_EVALUATION = _Presenters(_evaluation_text, _evaluation_html, _evaluation_page)
_FORECAST = _Presenters(_forecast_text, _forecast_html, _forecast_page, _forecast_json)
_BOARD = _Presenters(_board_text, _board_html, _board_page)
_PROGRAM = _Presenters(_program_text, _no_program_page, _no_program_page, _program_json)


def _presenters(result: object) -> _Presenters:
    """The presenters of ``result``'s type, or of the type it derives from (the
    notebook's report is a report). The types are tried in this order, and each is
    imported only when the ones before it did not match: the type of the result is
    loaded already, so a report never loads the evaluation's modules, and an
    evaluation not the agreement board's."""
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
        return _PROGRAM
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


def guardrail_power_line(g: GuardrailPower) -> str:
    """One guardrail's non-inferiority plan as a sentence (``abeval power``)."""
    from abeval.report.decision_text import guardrail_power_line as line

    return line(g)


def correction_name(code: str) -> str:
    """A multiple-testing correction's name (``holm`` → ``Holm``)."""
    from abeval.report.text import CORRECTION_NAMES

    return CORRECTION_NAMES.get(code, code)


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


def settings_line(experiment: str, s: ExperimentSettings) -> str:
    """``home: control control; split equal; window ...``: the recorded settings."""
    from abeval.formatting import when

    shares = ", ".join(f"{k}={v:.0%}" for k, v in (s.split or {}).items()) or "equal"
    if s.control_arm:
        chosen = s.control_arm
    elif "control" in s.arms:
        chosen = "control (the arm named control)"
    else:
        chosen = "not recorded (set it with --control ARM)"
    line = f"{experiment}: control {chosen}; split {shares}"
    if s.window_from or s.window_to:
        first = when(s.window_from.isoformat()) if s.window_from else "the first event"
        last = when(s.window_to.isoformat()) if s.window_to else "the last event"
        line += f"; window {first} to {last} (excluded)"
    return line


def settings_lines(experiment: str, s: ExperimentSettings, config: ExperimentConfig) -> list[str]:
    """``abeval experiment show``: the settings line, one line per recorded option, and
    the options left to their defaults."""
    lines = [settings_line(experiment, s), *(f"  {line}" for line in config_lines(config))]
    if config.plan_recorded is not None:
        from abeval.report.method_text import plan_record_text

        lines.append(f"  plan {plan_record_text(config.plan_recorded)}")
    missing = [flag for name, flag in recordable_options().items() if getattr(config, name) is None]
    if missing:
        lines.append(f"  not recorded (the defaults apply): {', '.join(missing)}")
    return lines


def settings_document(
    experiment: str, s: ExperimentSettings, config: ExperimentConfig
) -> dict[str, Any]:
    """``abeval experiment show -f json``: what is recorded for one experiment."""
    return {
        "experiment": experiment,
        "arms": s.arms,
        "control": s.control_arm,
        "split": s.split,
        "window_from": s.window_from.isoformat() if s.window_from else None,
        "window_to": s.window_to.isoformat() if s.window_to else None,
        "config": config.recorded(),
    }


def targets_line(experiment: str, done: TargetsRecorded) -> str:
    """The target's probabilities recorded: the coverage of each direction and the
    rows left out."""
    found, r = done.check, done.recorded
    covered = "; ".join(
        f"{c.target} from {c.source}'s logs: {c.covered:,} of {c.requests:,} requests "
        f"({c.share:.1%})"
        for c in found.coverage
    )
    line = f"{experiment}: target probabilities recorded from {r.file}: {r.rows:,} rows; {covered}"
    if found.unmatched:
        line += f"; {found.unmatched:,} rows name no request of this experiment (not recorded)"
    return line


def ingest_lines(s: IngestSummary) -> list[str]:
    """An ingested file's summary (every row read counted once), the bad rows kept
    and the notes: what ``abeval ingest`` says on stderr."""
    from abeval.formatting import printable

    lines = [
        f"{printable(s.file)}: {s.rows_read:,} rows read: {s.inserted:,} inserted, "
        f"{s.repeated_in_file:,} repeated in the file, {s.already_stored:,} already in the "
        f"store, {s.conflicts:,} conflicting, {s.rejected:,} rejected "
        f"({s.seconds:.2f} s, {s.rows_per_second:,.0f} rows/s)"
    ]
    kept = s.rejected + s.conflicts
    if kept:
        lines.append(
            f"  {kept:,} bad row{'' if kept == 1 else 's'} kept in rejected_rows "
            f"(ingest {s.ingest_id}); list them with `abeval rejects --ingest {s.ingest_id}`"
        )
    lines += [f"  {printable(note)}" for note in s.notes]
    return lines


def experiments_lines(found: Sequence[ExperimentSummary]) -> list[str]:
    """Each experiment's time range, control and source, then its arms' users and
    events (``abeval experiments``)."""
    from abeval.formatting import counted, printable, when

    lines = []
    for e in found:
        control = f", control {e.control_arm}" if e.control_arm else ""
        place = f", read in place from source {e.source}" if e.source else ""
        span = f"{when(e.first_ts)} .. {when(e.last_ts)}"
        lines.append(printable(f"{e.experiment}  {span}{control}{place}"))
        for a in e.arms:
            events = ", ".join(f"{k} {v:,}" for k, v in a.events.items())
            lines.append(
                printable(f"  {a.arm}: {counted(a.users, 'user')}; {events or 'no events'}")
            )
        if e.users_in_several_arms:
            several = counted(e.users_in_several_arms, "user")
            lines.append(f"  {several} seen in several arms (left out of the analysis)")
    return lines


def plan_lines(experiment: str, plan: Plan) -> list[str]:
    """The design and level of the plan, what each metric and arm detects now and
    what the target needs, and each guardrail's plan (``abeval power --experiment``)."""
    from abeval.formatting import count, number, pct
    from abeval.report.decision_text import looks_text
    from abeval.report.words import said

    o = plan.options
    design = "sequential" if o.sequential else "fixed-horizon"
    level = f"alpha {plan.planning_alpha:g}"
    if plan.planning_rule != "single_test":
        name = correction_name(o.correction)
        family = len(plan.power)
        level += f" ({o.alpha:g} over {family} primary comparisons, {name}'s smallest step)"
    lines = [f"{experiment}: a {design} test at {level} and {o.power:.0%} power"]
    for r in plan.power:
        now, need = r.detectable, r.needed_for_target
        lines.append(
            f"{plan.catalog.label(r.metric)} ({r.arm}): baseline {number(now.baseline_mean)}"
        )
        lines.append(f"  detects {pct(now.mde_relative)} now with {count(now.total_users)} users")
        if need.status != "ok":
            lines.append(f"  {said(need.status, need.message)}")
            continue
        lines.append(
            f"  a {pct(need.mde_relative)} lift needs {count(need.total_users)} users in all"
        )
        if r.more_days_needed is not None and r.users_per_day:
            lines.append(f"  {days_text(r.more_days_needed, r.users_per_day, 'more ')}")
        looks = looks_text(r)
        if looks:
            lines.append(f"  {looks}")
    lines += [guardrail_power_line(g) for g in plan.guardrails]
    return lines


def metrics_lines(rows: Sequence[MetricRow]) -> list[str]:
    """The built-in metrics, then the team-defined ones with where and when they
    were recorded, each with its kind and definition (``abeval metrics``)."""
    from abeval.formatting import printable

    lines = []
    width = max(len(r.name) for r in rows)
    for builtin, title in ((True, "built-in"), (False, "recorded (team-defined)")):
        group = [r for r in rows if r.builtin == builtin]
        if not builtin and not group:
            lines.append("recorded: none; define metrics in TOML and run `abeval metrics add FILE`")
            continue
        lines.append(title)
        for r in group:
            better = ", lower is better" if r.lower_is_better else ""
            lines.append(printable(f"  {r.name:<{width}}  {r.kind:<10}  {r.definition}{better}"))
            if not builtin:
                said = f"{r.description}; " if r.description else ""
                when = r.recorded_at.strftime("%Y-%m-%d %H:%M UTC") if r.recorded_at else ""
                lines.append(printable(f"  {'':<{width}}  {'':<10}  {said}from {r.source}, {when}"))
    return lines


def sources_lines(sources: Sequence[Source]) -> list[str]:
    """Each source's name and table, and its mapping (``abeval source list``)."""
    from abeval.formatting import printable

    lines = []
    for s in sources:
        lines.append(printable(f"{s.name}  {s.table}"))
        lines.append(printable(f"  {mapping_text(s.mapping)}"))
    return lines


def sources_document(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """The sources as the JSON document ``abeval source list -f json`` writes: each
    one's name, table, mapping and times."""
    return [
        {
            "name": s.name,
            "table": s.table,
            "mapping": mapping_dict(s.mapping),
            "created_at": s.created_at.isoformat(),
            "updated_at": s.updated_at.isoformat(),
        }
        for s in sources
    ]


def source_check_lines(check: SourceCheck, *, replaced: bool = False) -> list[str]:
    """A source added (or ``replaced``): the events of each experiment it holds and
    the rows of event types that map to nothing (``abeval source add``)."""
    from abeval.formatting import counted, printable

    s = check.source
    verb = "replaced" if replaced else "added"
    lines = [printable(f"{verb} source {s.name!r}: {s.table}, read in place")]
    for exp, n in check.events.items():
        kept = " (the store's ingested copy is the one analysed)" if exp in check.in_store else ""
        lines.append(printable(f"  {exp}: {counted(n, 'event')}{kept}"))
    if check.unmapped:
        total = sum(check.unmapped.values())
        values = ", ".join(f"{v} {n:,}" for v, n in list(check.unmapped.items())[:8])
        lines.append(
            printable(
                f"  {counted(total, 'row')} of event types that map to nothing, not analysed: "
                f"{values} (map them with --event-type TYPE=VALUE)"
            )
        )
    return lines


def power_lines(result: PowerResult, *, kind: str, users_per_day: float | None = None) -> list[str]:
    """Power by hand (``abeval power --baseline``): the design, the lift detected,
    the users it takes and, given the traffic, the days; ``kind`` says whether
    the baseline is a ``proportion`` or a ``mean``."""
    design = "sequential" if result.sequential else "fixed-horizon"
    per_arm = result.users_by_arm[0] if result.users_by_arm else 0
    lines = [
        f"{kind} with baseline {result.baseline_mean:g}: a {design} test at alpha "
        f"{result.alpha:g} and {result.power:.0%} power",
        f"  detects a relative lift of {(result.mde_relative or 0):+.2%} "
        f"({(result.mde_absolute or 0):+.4g} absolute)",
        f"  with {per_arm:,} users per arm, {result.total_users or 0:,} in all",
    ]
    if users_per_day and result.total_users:
        lines.append(f"  {days_text(result.total_users / users_per_day, users_per_day)}")
    return lines
