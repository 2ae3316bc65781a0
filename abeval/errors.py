"""User-facing errors.

Every mistake a user can make (a bad file, an unknown experiment, a locked store)
raises :class:`AbevalError` with one line that says what is wrong and how to fix
it. The CLI prints that line as ``Error: ...`` on stderr and exits with 1; any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    """An input file does not follow the event format."""


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that open transactions roll back the same way."""

    signum = 15


_signals: list[int] = []


def note_signal(signum: int) -> None:
    """Remember a stopping signal, so that a query it cut short can name it."""
    _signals.append(signum)


def interruption() -> KeyboardInterrupt:
    """The exception for a query that a signal cut short: :class:`Terminated` after
    SIGTERM, else ``KeyboardInterrupt`` (Ctrl-C)."""
    return Terminated() if 15 in _signals else KeyboardInterrupt()


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
