"""User-facing errors.

Every mistake a user can make (a bad file, an unknown experiment, a locked store)
raises :class:`AbevalError` with one line that says what is wrong and how to fix
it. The CLI prints that line as ``Error: ...`` on stderr and exits with the
error's code (1; 2 for an :class:`OptionError`); any other exception is a bug and
keeps its traceback. The library speaks in its own parameter names: an
:class:`OptionError` names the parameter (``primary``), and the CLI spells it as
its option (``--primary``) when it prints the line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class AbevalError(Exception):
    """A user mistake or an environment problem, explained in one line."""

    exit_code = 1
    label = "Error"

    def __init__(self, message: str, *, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class InputError(AbevalError):
    """An input file does not follow the expected format; where known, ``file``,
    ``line`` and ``column`` say where (the message already names them)."""

    def __init__(
        self,
        message: str,
        *,
        details: list[str] | None = None,
        file: str | None = None,
        line: int | None = None,
        column: str | int | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.file = file
        self.line = line
        self.column = column


class OptionError(AbevalError):
    """An invalid option value (a usage error, exit code 2).

    ``parameter`` is the library's name for the option (``k``, ``primary``),
    ``value`` what was given, ``allowed`` the values allowed (a sequence) or a
    description of them. ``reason`` is the line without the option's name: the CLI
    prints ``<--option spelling> <value>: <reason>``, the library's ``message``
    names the parameter instead."""

    exit_code = 2

    def __init__(
        self,
        parameter: str,
        value: Any,
        reason: str,
        *,
        allowed: Sequence[Any] | str | None = None,
        details: list[str] | None = None,
    ) -> None:
        given = "" if value is None else f"={_shown(value)}"
        super().__init__(f"{parameter}{given}: {reason}", details=details)
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        self.reason = reason

    def line(self, option: str) -> str:
        """The one line, naming the option as ``option`` spells it (``--primary``)."""
        given = "" if self.value is None else f" {_shown(self.value)}"
        return f"{option}{given}: {self.reason}"


def _shown(value: Any) -> str:
    """An option's value as a user wrote it: a string quoted, a list comma-joined."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list | tuple):
        return repr(",".join(str(v) for v in value))
    return str(value)


class OutputError(AbevalError):
    """An output cannot be written where it was asked for (a folder, a path under a
    file, a missing or read-only folder); ``path`` is the output asked for."""

    def __init__(self, message: str, *, path: str, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.path = path


class StoreError(AbevalError):
    """The store cannot be opened, is locked, or is outdated."""


class NotFoundError(AbevalError):
    """An experiment, arm or column named by the user does not exist."""


class Interrupted(AbevalError):
    """The user stopped a command (Ctrl-C, SIGTERM); the message says what was kept.

    The exit code is the shell's for a death by that signal: 130 for SIGINT,
    143 for SIGTERM."""

    label = "Interrupted"

    def __init__(self, message: str, *, signum: int = 2, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.exit_code = 128 + signum


# SIGTERM's exception lives with the signal handler, which must not import.
from abeval.signals import Terminated as Terminated  # noqa: E402


def interruption() -> KeyboardInterrupt:
    """The exception for a query that a signal cut short: :class:`Terminated` after
    SIGTERM, else ``KeyboardInterrupt`` (Ctrl-C)."""
    from abeval import signals

    return Terminated() if signals.received(15) else KeyboardInterrupt()


def close_matches(
    word: str,
    known: Iterable[str],
    *,
    aliases: Mapping[str, str] | None = None,
    n: int = 3,
    cutoff: float = 0.6,
) -> list[str]:
    """The known words a user probably meant by ``word``, best first: the one
    ``aliases`` gives for it (``timestamp`` → ``ts``), then those close in spelling
    (difflib), compared in lower case and without ``_``, ``-`` or spaces."""
    import difflib

    known = list(known)

    def squash(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch not in "_- ")

    by_squash: dict[str, str] = {}
    for k in known:
        by_squash.setdefault(squash(k), k)
    out: list[str] = []
    alias = (aliases or {}).get(squash(word))
    if alias in known:
        out.append(alias)
    for match in difflib.get_close_matches(squash(word), list(by_squash), n=n, cutoff=cutoff):
        if by_squash[match] not in out:
            out.append(by_squash[match])
    return out[:n]


def did_you_mean(word: str, known: Iterable[str], **options: Any) -> str:
    """``"did you mean X? "`` (or ``"X or Y"``) for :func:`close_matches`, else ``""``."""
    close = close_matches(word, known, **options)
    return f"did you mean {' or '.join(close)}? " if close else ""
