"""``abeval metrics``, ``abeval metrics add FILE`` and ``abeval metrics remove NAME``:
team-defined metrics
(docs/metrics.md#team-defined-metrics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from abeval.cli.app import DbOption, app, command


class _MetricsApp(typer.Typer):
    """``abeval metrics`` lists (the group's own callback, behind the CLI's error
    boundary like any command) and has the sub-command ``add``."""

    def command(self, name: str | None = None, **kwargs: Any) -> Any:
        if name is None:
            return self.callback(invoke_without_command=True, **kwargs)
        return super().command(name, **kwargs)


metrics_app = _MetricsApp(help="Online metrics: list them, record team-defined ones.")
app.add_typer(metrics_app, name="metrics")


@command(metrics_app)
def metrics_list(
    ctx: typer.Context,
    fmt: Annotated[
        Literal["text", "json"], typer.Option("--format", "-f", help="text (default) or json.")
    ] = "text",
    db: DbOption = None,
) -> None:
    """List every online metric, built-in and recorded, with its definition."""
    if ctx.invoked_subcommand is not None:
        return
    from abeval import api, render

    with api.open(db, read_only=True) as store:
        rows = store.metrics()
    if fmt == "json":
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=2))
        return
    for line in render.metrics_lines(rows):
        typer.echo(line)


@command(metrics_app, "add")
def metrics_add(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="A metrics file in TOML, one table per metric.")
    ],
    db: DbOption = None,
) -> None:
    """Record the metrics a TOML file defines (all of them, or none when one is wrong)."""
    from abeval import api

    with api.open(db) as store:
        added = store.add_metrics(file)
    names = ", ".join(m.name for m in added.metrics)
    count = len(added.metrics)
    typer.echo(f"recorded {count} metric{'s' if count != 1 else ''} from {file.name}: {names}")
    if added.replaced:
        typer.echo(f"replaced the earlier definitions of {', '.join(added.replaced)}")
    for warning in added.warnings:
        typer.echo(f"Warning: {warning}", err=True)


@command(metrics_app, "remove")
def metrics_remove(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The recorded metric to forget.")],
    db: DbOption = None,
) -> None:
    """Forget a recorded metric (the events are not touched)."""
    from abeval import api
    from abeval.formatting import printable

    with api.open(db, create=False) as store:
        removed = store.remove_metric(name)
    typer.echo(printable(f"removed metric {removed.name!r} (recorded from {removed.source})"))
