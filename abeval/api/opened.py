"""What every part of an open store's API shares: the store's database, closing it, and
its metric catalog (the built-in and team-defined metrics a name is checked against
and a result is computed with)."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
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

    def catalog(self) -> Catalog:
        """This store's metrics, read now: the built-in online metrics and the
        team-defined ones it records (``metrics add``), each with its label and
        direction. Every result is computed with the catalog of its own store and
        carries it, so two stores open at once never mix their metrics.

        >>> store.catalog().lower_is_better("ctr")
        False
        """
        from abeval.analysis.team_metrics import read_catalog

        with self._store.connect() as conn:
            return read_catalog(conn)
