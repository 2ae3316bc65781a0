"""Usage errors in one line, in the house style of :class:`~abeval.errors.OptionError`.

Typer checks an option's type with pydantic and says so ("Input should be a valid
number", "Value error, 'pdf' is not one of ..."), then adds its usage lines. The
application's group (:class:`~abeval.cli.app.AbevalGroup`) prints instead one
line naming the option, the value where it is known, and what to give:
``Error: --format 'pdf': choose one of html, json, text``.
"""

from __future__ import annotations

from typing import Any

from typer._click import exceptions as click_errors

from abeval.errors import shown_value
from abeval.formatting import printable

#: What an option of each pydantic type takes, for a value pydantic could not read.
_TAKES = {
    "int_parsing": "give a whole number",
    "int_from_float": "give a whole number",
    "float_parsing": "give a number",
    "bool_parsing": "give true or false",
    "finite_number": "give a finite number",
}


def option_spelling(param: Any) -> str:
    """The name a user knows an option by: its long spelling (``--format``), else
    its short one; an argument's metavar (``FILE``)."""
    opts = [o for o in getattr(param, "opts", []) if isinstance(o, str)]
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "metavar", None) or (param.name or "").upper())
    longs = [o for o in opts if o.startswith("--")]
    return (longs or opts)[0]


def _choices(param: Any) -> list[str] | None:
    desc = getattr(param, "type_descriptor", None)
    if desc is None or not getattr(desc, "is_choice", False) or desc.choices is None:
        return None
    return [str(getattr(c, "value", c)) for c in desc.choices]


def _bad_value(exc: click_errors.BadParameter) -> str:
    """``--alpha 'abc': give a number`` for a value Typer's types refused."""
    param = exc.param
    name = exc.param_hint if param is None else option_spelling(param)
    if param is None:
        return f"{name}: {exc.message}" if name else exc.message
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors) and errors():
        first = errors()[0]
        value = first.get("input")
        choices = _choices(param)
        if choices is not None:
            reason = f"choose one of {', '.join(choices)}"
        else:
            reason = _TAKES.get(first.get("type", ""), _plain(str(first.get("msg", ""))))
        return f"{name} {shown_value(value)}: {reason}"
    return f"{name}: {_plain(exc.message)}"


def _plain(message: str) -> str:
    """A validation library's sentence without its prefixes, in lower case."""
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    message = message.replace("Input should be", "give").rstrip(".")
    return message[:1].lower() + message[1:]


def one_line(exc: click_errors.ClickException) -> str:
    """The one line a usage error prints after ``Error: ``."""
    if isinstance(exc, click_errors.MissingParameter) and exc.param is not None:
        metavar = getattr(exc.param, "metavar", None)
        name = option_spelling(exc.param)
        what = name if name == metavar or not metavar else f"{name} {metavar}"
        return f"missing {what}{_see(exc)}"
    if isinstance(exc, click_errors.BadParameter):
        return _bad_value(exc)
    if isinstance(exc, click_errors.NoSuchOption):
        close = sorted(exc.possibilities or [])
        hint = f"; did you mean {' or '.join(close)}?" if close else _see(exc)
        return f"no such option {exc.option_name}{hint}"
    if isinstance(exc, click_errors.BadOptionUsage):
        return f"{exc.option_name}: needs a value" if "requires" in exc.message else exc.message
    message = exc.format_message()
    return message[:1].lower() + message[1:]


def _see(exc: click_errors.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    return "" if ctx is None else f"; see {ctx.command_path} --help"


def show(exc: click_errors.ClickException) -> None:
    """Print the error's one line on stderr (a bare ``abeval`` prints its help)."""
    import typer

    if isinstance(exc, click_errors.NoArgsIsHelpError):
        exc.show()
        return
    typer.echo(f"Error: {printable(one_line(exc))}", err=True)
