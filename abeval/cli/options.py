"""Options that several commands take, each defined once.

The grammar every command keeps (docs/usage.md#one-grammar): ``-f/--format``
chooses what a command writes (``--json`` is a hidden ``--format json``),
``-e/--experiment`` names an experiment, ``-o/--out`` says where to write, and a
recordable option (``--primary``, ``--cap`` ...) means the same in ``report`` and
``experiment set``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from abeval.choices import Correction, EvaluateFormat, OutputFormat, ReportFormat

#: ``-f/--format`` of a command that prints text or JSON.
FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format", "-f", help="What to write: text (default) or json.", show_default=False
    ),
]
#: ``-f/--format`` of a command whose default is an HTML page (report, agreement).
PageFormatOption = Annotated[
    ReportFormat,
    typer.Option(
        "--format", "-f", help="What to write: html (default), json or text.", show_default=False
    ),
]
#: ``-f/--format`` of a command that prints text by default and can write a page.
TextPageFormatOption = Annotated[
    EvaluateFormat,
    typer.Option(
        "--format", "-f", help="What to write: text (default), json or html.", show_default=False
    ),
]
#: ``--show-store`` of a command that writes a page (report, agreement, forecast):
#: the page names the store's place, not only its kind; pages are shared.
ShowStoreOption = Annotated[
    bool,
    typer.Option(
        "--show-store",
        help="HTML: name the store's path or URL on the page (default: only its kind, "
        "such as DuckDB store, since pages are shared).",
    ),
]
#: ``--verbose`` of a command whose text folds long diagnostics (report).
VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="Text: show the long diagnostics in full (each position's off-policy weights).",
    ),
]
#: ``--json``, kept hidden for scripts: the same as ``--format json``.
JsonAlias = Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")]


F = TypeVar("F", bound=str)


def chosen_format(fmt: F, as_json: bool) -> F:
    """``--format``, or json when the hidden ``--json`` was given."""
    return cast(F, "json") if as_json else fmt


def experiment_option(help: str) -> Any:
    """``-e/--experiment NAME`` with this help (``Annotated[str | None, ...]``)."""
    return typer.Option("--experiment", "-e", metavar="NAME", help=help, show_default=False)


KOption = Annotated[
    str,
    typer.Option("--k", metavar="K,K...", help="Cutoffs of the offline metrics, comma-separated."),
]
FromOption = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="DATE|TIMESTAMP",
        help="Analyse events from this instant on (ISO 8601; UTC unless it has a zone; "
        "default: the recorded window, else the first event).",
        show_default=False,
    ),
]
ToOption = Annotated[
    str | None,
    typer.Option(
        "--to",
        metavar="DATE|TIMESTAMP",
        help="Analyse events before this instant (a date: through that day).",
        show_default=False,
    ),
]
TargetPropensitiesOption = Annotated[
    Path | None,
    typer.Option(
        "--target-propensities",
        metavar="FILE",
        help="Off-policy estimates: the target policy's probabilities (request_id, item_id, "
        "position, probability; optionally arm, probability_given_above); default: the "
        "recorded file, else the target arm's empirical frequencies.",
        show_default=False,
    ),
]

# The recordable options of `report` and `experiment set`
# (docs/usage.md#saved-configuration): the defaults apply when none is recorded.
PrimaryOption = Annotated[
    str | None,
    typer.Option(
        metavar="METRICS",
        help="Primary metrics, comma-separated (default ctr,conversion).",
        show_default=False,
    ),
]
SecondaryOption = Annotated[
    str | None,
    typer.Option(
        metavar="METRICS", help="Secondary metrics (default: every other one).", show_default=False
    ),
]
GuardrailsOption = Annotated[
    str | None,
    typer.Option(
        metavar="METRIC[:MARGIN],...",
        help="Guardrail metrics, each with an optional margin, the relative harm it may "
        "show at most (e.g. revenue_per_user:2%; default impressions_per_user).",
        show_default=False,
    ),
]
CapOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cap",
        metavar="METRIC=QUANTILE",
        help="Cap per-user values at this quantile of both arms pooled, e.g. "
        "revenue_per_user=0.99 (repeatable or comma-separated).",
        show_default=False,
    ),
]
CupedDaysOption = Annotated[
    int | None,
    typer.Option(
        "--cuped-days", help="CUPED pre-period in days (default 14; 0: off).", show_default=False
    ),
]
TargetMdeOption = Annotated[
    float | None,
    typer.Option(
        "--target-mde",
        help="Relative lift the test should detect (default 0.02).",
        show_default=False,
    ),
]
AlphaOption = Annotated[
    float | None,
    typer.Option(help="Two-sided significance level (default 0.05).", show_default=False),
]
CorrectionOption = Annotated[
    Correction | None,
    typer.Option(
        help="Multiple-testing correction: Holm (default) or Benjamini-Hochberg.",
        show_default=False,
    ),
]
PlanUsersOption = Annotated[
    int | None,
    typer.Option("--plan-users", help="Planned users in all arms.", show_default=False),
]
PlanDaysOption = Annotated[
    int | None, typer.Option("--plan-days", help="Planned days.", show_default=False)
]
