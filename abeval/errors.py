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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


class AbevalError(Exception):
    """A user mistake or an environment problem, explained in one line.

    >>> try:
    ...     abeval.open("missing.duckdb", read_only=True)
    ... except abeval.AbevalError as e:
    ...     print(e)
    """

    exit_code = 1
    label = "Error"

    def __init__(
        self,
        message: str,
        *,
        details: list[str] | None = None,
        parameters: Sequence[str] = (),
    ) -> None:
        # A fix that names a parameter writes it as {parameter}: the library's
        # message shows the parameter's name, the CLI its option (line()).
        self.template = message
        self.parameters = tuple(parameters)
        message = self._spelt(str)
        super().__init__(message)
        self.message = message
        self.details = details or []

    def _spelt(self, spell: Callable[[str], str]) -> str:
        out = self.template
        for p in self.parameters:
            out = out.replace("{" + p + "}", spell(p))
        return out

    def spelt(self, spell: Callable[[str], str]) -> str:
        """The message with each ``{parameter}`` spelt by ``spell`` (the CLI passes
        the option's name: ``input_format`` → ``--input-format``); ``message``
        spells it as the parameter's name."""
        return self._spelt(spell)

    def prefixed(self, before: str, after: str = "") -> AbevalError:
        """The same error with ``before`` put in front of its line and ``after``
        behind it (an OptionError, whose line starts with its option, is returned
        as it is)."""
        import copy

        new = copy.copy(self)
        new.template = before + self.template + after
        new.message = new._spelt(str)
        new.args = (new.message,)
        return new


class InputError(AbevalError):
    """An input file does not follow the expected format; where known, ``file``,
    ``line`` and ``column`` say where (the message already names them).

    >>> try:
    ...     abeval.evaluate("truth.csv", {"m": "bad.csv"})
    ... except abeval.InputError as e:
    ...     print(e.where, e)
    """

    def __init__(
        self,
        message: str,
        *,
        details: list[str] | None = None,
        parameters: Sequence[str] = (),
        file: str | None = None,
        line: int | None = None,
        column: str | int | None = None,
    ) -> None:
        super().__init__(message, details=details, parameters=parameters)
        self.file = file
        self.line = line
        self.column = column


class DamagedFile(InputError):
    """A compressed input file ends before its compressed stream does, or its
    compressed data is damaged: ``file`` names it, ``line`` is the last whole line
    read from it (at least), ``size`` its size in bytes."""

    def __init__(self, message: str, *, file: str, line: int, size: int) -> None:
        super().__init__(message, file=file, line=line)
        self.size = size


class OptionError(AbevalError):
    """An invalid option value (a usage error, exit code 2).

    ``parameter`` is the library's name for the option (``k``, ``primary``;
    empty for a call that gives none of several options it needs one of),
    ``value`` what was given, ``allowed`` the values allowed (a sequence) or a
    description of them. ``reason`` is the line without the option's name: the CLI
    prints ``<--option spelling> <value>: <reason>``, the library's ``message``
    names the parameter instead.

    >>> try:
    ...     store.report("home-reco-v2", alpha=2)
    ... except abeval.OptionError as e:
    ...     print(e.parameter, e.value, e.allowed)
    """

    exit_code = 2

    def __init__(
        self,
        parameter: str,
        value: Any,
        reason: str,
        *,
        allowed: Sequence[Any] | str | None = None,
        details: list[str] | None = None,
        mentions: Sequence[str] = (),
    ) -> None:
        # A reason that names another parameter writes it as {name} (``mentions``):
        # the library's message shows its name, the CLI its option.
        given = "" if value is None else f"={shown_value(value)}"
        named = f"{parameter}{given}: " if parameter else ""
        super().__init__(f"{named}{reason}", details=details, parameters=mentions)
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        self._reason = reason
        for p in mentions:
            reason = reason.replace("{" + p + "}", p)
        self.reason = reason

    def line(self, option: str, spell: Callable[[str], str] = str) -> str:
        """The one line, naming the option as ``option`` spells it (``--primary``)
        and each parameter its reason mentions as ``spell`` does."""
        reason = self._reason
        for p in self.parameters:
            reason = reason.replace("{" + p + "}", spell(p))
        given = "" if self.value is None else f" {shown_value(self.value)}"
        return f"{option}{given}: {reason}" if option else reason

    def spelt(self, spell: Callable[[str], str]) -> str:
        return self.line(spell(self.parameter) if self.parameter else "", spell)

    def prefixed(self, before: str, after: str = "") -> AbevalError:
        return self


class KeywordError(OptionError, TypeError):
    """A keyword argument that the function called does not take (``alpah=0.1``):
    an :class:`OptionError` naming the keyword, with a did-you-mean for the
    closest real one (``allowed``: the keywords it takes), and a ``TypeError``
    too, as Python raises for an unknown keyword, so that ``except TypeError``
    still catches it."""

    def __init__(self, keyword: str, function: str, known: Sequence[str]) -> None:
        close = close_matches(keyword, known)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        super().__init__(keyword, None, f"{function}() takes no such keyword{hint}", allowed=known)
        self.function = function


def shown_value(value: Any) -> str:
    """An option's value as a user wrote it: a string quoted, a list comma-joined."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list | tuple):
        return repr(",".join(str(v) for v in value))
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))  # 2, as a user writes it, not 2.0
    return str(value)


class OutputError(AbevalError):
    """An output cannot be written where it was asked for (a folder, a path under a
    file, a missing or read-only folder); ``path`` is the output asked for.

    >>> try:
    ...     abeval.render.write("/no/such/folder/page.html", "...")
    ... except abeval.OutputError as e:
    ...     print(e)
    """

    def __init__(self, message: str, *, path: str, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.path = path


class StoreError(AbevalError):
    """The store cannot be opened, is locked, or is outdated.

    >>> try:
    ...     abeval.open("missing.duckdb", read_only=True)
    ... except abeval.StoreError as e:
    ...     print(e)
    """


class StoreClosed(StoreError):
    """A call on a store after its ``close()`` (the message names the store)."""


class StoreHeldHere(StoreError):
    """A DuckDB file that another store of this process holds with other settings:
    a write through one ``abeval.open`` of it while another reads it (DuckDB lets
    one process open a file for reading or for writing, not both). The message
    names the store and says to close the other one."""


class NotFoundError(AbevalError):
    """An experiment, arm or column named by the user does not exist.

    >>> try:
    ...     store.report("no-such-experiment")
    ... except abeval.NotFoundError as e:
    ...     print(e)
    """


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
