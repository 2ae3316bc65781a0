"""What every part of an open store's API shares: the store's database, closing it, and
the team-defined metrics a metric name is checked against."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from abeval.store.database import Database


class Opened:
    """An open store (the base of :class:`abeval.api.Store` and its parts)."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    @property
    def display(self) -> str:
        """The store as messages name it (a URL without its password)."""
        return self._store.display

    def __repr__(self) -> str:
        return f"<abeval store {self.display}>"

    def _use_recorded_metrics(self) -> None:
        """Make the store's team-defined metrics known, so that a name is checked
        against them as well as the built-ins."""
        from abeval.analysis.team_metrics import use_recorded

        with self._store.connect() as conn:
            use_recorded(conn)
