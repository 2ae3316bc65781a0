"""``abeval program``: the statistics of a program of experiments from a history
file (docs/usage.md#a-program-of-experiments)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from abeval.cli.app import app, command, emit
from abeval.cli.options import FormatOption, JsonAlias, chosen_format


@command(app, "program")
def program(
    history: Annotated[
        Path,
        typer.Option(
            "--history",
            metavar="FILE",
            help="The experiments: a CSV or Parquet file (experiment, metric, lift, se; "
            "optional status, date, tag).",
            show_default=False,
        ),
    ],
    primary: Annotated[
        str | None,
        typer.Option(
            metavar="METRIC",
            help="The metric of the win rate and the impact (default: the history's first).",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Two-sided level of every interval.")] = 0.05,
    fmt: FormatOption = "text",
    as_json: JsonAlias = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where to write (default: stdout).", show_default=False),
    ] = None,
) -> None:
    """Every experiment of a program together: the prior of true effects learned
    from them, each one's shrunken lift, the win rate and the shipped ones' impact,
    raw and de-biased."""
    from abeval import api, render

    result = api.program(history, primary=primary, alpha=alpha)
    if chosen_format(fmt, as_json) == "json":
        document = render.json_document(result)
        emit(json.dumps(document, indent=2, allow_nan=False) + "\n", out)
    else:
        emit(render.text(result), out)
