"""``abeval source add|list|remove``: tables read in place, without ingesting them
(docs/usage.md#tables-read-in-place)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from abeval.cli.app import DbOption, app, command
from abeval.cli.options import FormatOption, JsonAlias, chosen_format, experiment_option
from abeval.formatting import printable

if TYPE_CHECKING:
    from abeval.api import SourceCheck

source_app = typer.Typer(
    help="Tables read in place: map a table's columns to the event format.",
    no_args_is_help=True,
)
app.add_typer(source_app, name="source")

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The source's name.")]


@command(source_app, "add")
def source_add(
    name: NameArgument,
    table: Annotated[
        str,
        typer.Option(
            "--table",
            metavar="TABLE|FILES",
            help="SCHEMA.TABLE of the store's database; on DuckDB also Parquet or CSV files "
            "(a path or glob such as data/*.parquet).",
        ),
    ],
    columns: Annotated[
        str | None,
        typer.Option(
            "--map",
            metavar="FIELD=COLUMN,...",
            help="The table's column for each field of the event format whose column has "
            "another name, e.g. user_id=uid,ts=event_time.",
        ),
    ] = None,
    event_types: Annotated[
        str | None,
        typer.Option(
            "--event-type",
            metavar="TYPE=VALUE,...",
            help="The table's value for each event type named otherwise, e.g. "
            "impression=view,click=clk (a type may take several values).",
        ),
    ] = None,
    experiment_column: Annotated[
        str | None,
        typer.Option(
            "--experiment-column",
            metavar="COLUMN",
            help="The column naming each row's experiment (default: experiment).",
        ),
    ] = None,
    experiment: Annotated[
        str | None,
        experiment_option("The one experiment of a table that has no experiment column."),
    ] = None,
    attributes: Annotated[
        str | None,
        typer.Option(
            "--attributes",
            metavar="COLUMN|NAME=COLUMN,...",
            help="Other columns to keep as attributes (segments), e.g. country,device=dev.",
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace the mapping of an existing source.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Read a table in place: check the mapping against it and record it. Its
    experiments then appear in `abeval experiments` and `abeval report` reads them."""
    from abeval import api

    mapping = api.source_mapping(
        table=table,
        columns=columns,
        event_types=event_types,
        experiment_column=experiment_column,
        experiment=experiment,
        attributes=attributes,
    )
    with api.open(db) as store:
        check = store.add_source(name, mapping, table=table, replace=replace)
    _say(check, replace)


def _say(check: SourceCheck, replaced: bool) -> None:
    from abeval import render

    for line in render.source_check_lines(check, replaced=replaced):
        typer.echo(line, err=True)


@command(source_app, "list")
def source_list(
    db: DbOption = None, fmt: FormatOption = "text", as_json: JsonAlias = False
) -> None:
    """List the sources: name, table and mapping."""
    as_json = chosen_format(fmt, as_json) == "json"
    from abeval import api, render

    with api.open(db, read_only=True) as store:
        sources = store.sources()
    if as_json:
        typer.echo(json.dumps(render.sources_document(sources), indent=2))
        return
    if not sources:
        typer.echo("no sources; read a table in place with `abeval source add NAME --table T`")
        return
    for line in render.sources_lines(sources):
        typer.echo(line)


@command(source_app, "remove")
def source_remove(name: NameArgument, db: DbOption = None) -> None:
    """Forget a source (its table is not touched)."""
    from abeval import api

    with api.open(db, create=False) as store:
        removed = store.remove_source(name)
    typer.echo(
        printable(f"removed source {removed.name!r} ({removed.table} is not touched)"), err=True
    )
