"""User-facing errors.

Every mistake a user can make (a bad file, an unknown experiment, a locked store)
raises :class:`AbevalError` with one line that says what is wrong and how to fix
it. The CLI prints that line as ``Error: ...`` on stderr and exits with 1; any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class AbevalError(Exception):
    """A user mistake or an environment problem, explained in one line."""

    exit_code = 1

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
