"""The Typer application and the error boundary shared by every command.

Commands parse their options, call one library function and print its result.
A :class:`~abeval.errors.AbevalError` becomes ``Error: <one line>`` on stderr and
its exit code (1); usage mistakes exit 2, Typer's and the library's
:class:`~abeval.errors.OptionError` alike, the latter naming the option as the
command spells it (:func:`option_name`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer._click import Context, HelpFormatter
from typer._click import exceptions as click_errors
from typer.core import TyperGroup

from abeval import signals
from abeval.cli.options import PageFormatOption as PageFormatOption
from abeval.errors import AbevalError, Interrupted, OutputError

#: The commands in workflow order, in the sections ``abeval --help`` lists them in.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Load", ("demo", "ingest", "rejects", "source")),
    ("Analyse", ("experiment", "metrics", "report")),
    ("Offline", ("evaluate",)),
    ("Across experiments", ("agreement", "forecast")),
    ("Plan", ("power",)),
    ("Store", ("experiments", "migrate")),
)
#: The exit codes of every command (docs/usage.md#exit-codes).
EXIT_CODES: tuple[tuple[str, str], ...] = (
    ("0", "done"),
    ("1", "a data, file or store error (the line says which and how to fix it)"),
    ("2", "a usage error: an unknown option, a bad or missing value"),
    ("3", "report --fail-on: an arm reached a decision it names"),
    ("130, 143", "interrupted by Ctrl-C or SIGTERM (the line says what was kept)"),
)


class AbevalGroup(TyperGroup):
    """The ``abeval`` group: commands listed in workflow order and sections, the
    exit codes after them, and every usage error in one line (:mod:`abeval.cli.usage`)."""

    def list_commands(self, ctx: Context) -> list[str]:
        ordered = [name for _, names in SECTIONS for name in names if name in self.commands]
        return ordered + [name for name in self.commands if name not in ordered]

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        placed = {name for _, names in SECTIONS for name in names}
        other = tuple(name for name in self.commands if name not in placed)
        for title, names in (*SECTIONS, ("Other", other)):
            rows = []
            for name in names:
                cmd = self.commands.get(name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(formatter.width - 20)))
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def format_epilog(self, ctx: Context, formatter: HelpFormatter) -> None:
        with formatter.section("Exit codes"):
            formatter.write_dl(list(EXIT_CODES))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        def run(standalone: bool) -> Any:
            return super(AbevalGroup, self).main(
                args, prog_name, complete_var, standalone, windows_expand_args, **extra
            )

        if not standalone_mode:
            return run(False)
        from abeval.cli import usage

        try:
            code = run(False)
        except click_errors.UsageError as exc:
            usage.show(exc)
            sys.exit(exc.exit_code)
        except click_errors.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="abeval",
    cls=AbevalGroup,
    help="A/B test and offline ranking evaluation for recommender systems, from event logs.",
    rich_markup_mode=None,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

F = TypeVar("F", bound=Callable[..., Any])


def _version(value: bool) -> None:
    if value:
        from abeval import __version__

        typer.echo(f"abeval {__version__}")
        raise typer.Exit


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """A/B test and offline ranking evaluation for recommender systems, from event logs."""


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help="Store: a DuckDB file path or a SQLAlchemy URL "
        "(default: $ABEVAL_DB, else ./abeval.duckdb).",
        show_default=False,
    ),
]


def page_out(default: str) -> Any:
    """The ``--out``/``-o`` option of a command whose default is an HTML page
    written to ``default`` (``Annotated[Path | None, page_out(...)]``)."""
    return typer.Option(
        "--out",
        "-o",
        help=f"Where to write; - is stdout (html default: {default}; "
        "json and text default: stdout).",
        show_default=False,
    )


def emit(text: str, out: Path | None, default: Path | None = None) -> None:
    """Data goes to stdout, or to a file written whole (``-o PATH``, else
    ``default``); ``-o -`` is stdout. Writing a file is announced on stderr, so
    stdout only ever carries data. A ``default`` path's folder is created; an
    ``-o`` path's must exist (:func:`abeval.render.write`)."""
    target = out if out is not None else default
    if target is None or str(target) == "-":
        try:
            typer.echo(text, nl=not text.endswith("\n"))
            sys.stdout.flush()
        except OSError as exc:
            _drop_stdout()
            reason = exc.strerror or type(exc).__name__
            raise OutputError(f"cannot write to standard output: {reason}", path="-") from None
        return
    from abeval import render

    text = text if text.endswith("\n") else text + "\n"
    render.write(target, text, make_folders=out is None)
    typer.echo(f"wrote {target}", err=True)


def _drop_stdout() -> None:
    """Point standard output at the null device once writing to it failed, so
    that the interpreter's last flush does not fail again with a traceback."""
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def fail(
    message: str, details: list[str] | None = None, code: int = 1, label: str = "Error"
) -> typer.Exit:
    """Print ``Error: message`` (and detail lines) on stderr; return the Exit to raise.
    Control characters in them (from a file name, an experiment) are escaped."""
    from abeval.formatting import printable

    typer.echo(f"{label}: {printable(message)}", err=True)
    for line in details or []:
        typer.echo(printable(line), err=True)
    return typer.Exit(code)


#: Library parameters whose option is not spelt ``--`` + the name with ``-`` for ``_``.
OPTION_NAMES = {
    "window_from": "--from",
    "window_to": "--to",
    "fmt": "--format",
    "columns": "--map",
    "event_types": "--event-type",
    "caps": "--cap",
    "replace_existing": "--replace",
    # `experiment unset` takes the names as flags: its line is the reason alone.
    "names": "",
    "files": "FILE",
}


def option_name(parameter: str) -> str:
    """The CLI spelling of a library parameter: the exceptions in
    :data:`OPTION_NAMES`, else ``--`` and the name (``target_mde`` →
    ``--target-mde``)."""
    if parameter in OPTION_NAMES:
        return OPTION_NAMES[parameter]
    return "--" + parameter.replace("_", "-")


def command(on: typer.Typer, *args: Any, **kwargs: Any) -> Callable[[F], F]:
    """``on.command(...)`` behind the one error boundary of the CLI: an
    AbevalError becomes one line on stderr and its exit code (1; an OptionError,
    2, its line naming the option).

    Every command registers through this, on ``app`` or on a sub-application
    such as ``abeval experiment``."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            signals.running()
            try:
                result = fn(*a, **k)
            except Interrupted as exc:  # the command said what it kept
                signals.finished()
                raise fail(exc.message, exc.details, exc.exit_code, exc.label) from None
            except AbevalError as exc:
                signals.finished()
                if signals.seen() is not None:  # DuckDB's "Query interrupted" as a file error
                    raise _stopped(signals.seen()) from None
                line = exc.spelt(option_name)
                raise fail(line, exc.details, exc.exit_code, exc.label) from None
            except KeyboardInterrupt as exc:
                signals.finished()
                raise _stopped(getattr(exc, "signum", signal.SIGINT)) from None
            except Exception:
                signals.finished()
                if signals.seen() is not None:  # a library's own error for the interrupt
                    raise _stopped(signals.seen()) from None
                raise
            # A signal kept since the last commit came too late to stop anything: the
            # command finished and said what it wrote.
            signals.finished()
            return result

        on.command(*args, **kwargs)(wrapper)
        return fn

    return decorate


def _stopped(signum: int | None) -> typer.Exit:
    code = 128 + (signum or signal.SIGINT)
    return fail("stopped before the command finished", [], code, "Interrupted")


def run() -> None:
    """Run the application with SIGINT and SIGTERM handled by :mod:`abeval.signals`:
    the command stops, its transaction rolls back, and it says so in one line."""
    signals.install()
    try:
        app()
    except SystemExit as exc:  # click ends every run so, in standalone mode
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        signals.exit_after(code)
        raise
