"""``abeval program``: every experiment of the store together (its page, text or
JSON), or the statistics of a program from a history file
(docs/usage.md#a-program-of-experiments)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from abeval.cli.app import DbOption, app, command, emit
from abeval.cli.options import JsonAlias, ShowStoreOption, TextPageFormatOption, chosen_format


@command(app, "program")
def program(
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="Read the experiments from a CSV or Parquet file (experiment, metric, lift, "
            "se; optional status, date, tag) instead of the store.",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option(metavar="TAG", help="Only the experiments with this tag.", show_default=False),
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="Only the experiments of this owner.", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="DATE",
            help="Only the experiments dated from DATE (YYYY-MM-DD): decided then, or with "
            "their last event then when no decision is recorded.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Only those dated through DATE.", show_default=False),
    ] = None,
    primary: Annotated[
        str | None,
        typer.Option(
            metavar="METRIC",
            help="The metric of the win rate and the impact (default: the experiments' first "
            "primary metric, or the history's first).",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Two-sided level of every interval.")] = 0.05,
    with_reports: Annotated[
        Path | None,
        typer.Option(
            "--with-reports",
            metavar="DIR",
            help="Also write each experiment's report page into DIR (linked from the page).",
            show_default=False,
        ),
    ] = None,
    fmt: TextPageFormatOption = "text",
    as_json: JsonAlias = False,
    show_store: ShowStoreOption = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Where to write (default: stdout; html: reports/program.html).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Every experiment together: its status, decision and primary lift, the prior of
    true effects learned from them, each one's shrunken lift, the win rate and the
    shipped ones' impact, raw and de-biased."""
    from abeval import api, render

    fmt = chosen_format(fmt, as_json)
    api.program_inputs(
        history=history, tag=tag, owner=owner, since=since, until=until,
        with_reports=with_reports, db=db,
    )  # fmt: skip
    result: Any
    if history is not None:
        result = api.program(history, primary=primary, alpha=alpha)
    else:
        api.program_filters(tag=tag, owner=owner, since=since, until=until)  # before opening
        with api.open(db, create=False) as store:  # held read-only; keeps summaries
            result = store.program(
                tag=tag, owner=owner, since=since, until=until, primary=primary, alpha=alpha,
                reports=with_reports, progress=lambda line: typer.echo(line, err=True),
            )  # fmt: skip
    if fmt == "json":
        document = render.json_document(result)
        emit(json.dumps(document, indent=2, allow_nan=False) + "\n", out)
    elif fmt == "html":
        target = out if out is not None else render.page_path(result)
        links = None if str(target) == "-" else Path(target).parent
        page = render.html(result, links_from=links, show_store=show_store)
        emit(page, out, render.page_path(result))
    else:
        emit(render.text(result), out)
