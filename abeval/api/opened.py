"""What every part of an open store's API shares: the store's database, closing it, and
its metric catalog (the built-in and team-defined metrics a name is checked against
and a result is computed with)."""

from __future__ import annotations

import inspect
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database


class Opened:
    """An open store (the base of :class:`abeval.api.Store` and its parts)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Every public method of a store refuses a misspelt keyword with a
        # did-you-mean (abeval.api.options.keywords_checked), checked once here.
        super().__init_subclass__(**kwargs)
        from abeval.api.options import keywords_checked

        for name, member in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(member):
                setattr(cls, name, keywords_checked(member))

    def __init__(self, store: Database) -> None:
        self._store = store

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (a ``with`` block closes it on leaving).

        >>> store = abeval.open("demo/demo.duckdb", read_only=True)
        >>> store.close()
        """
        self._store.close()

    @property
    def display(self) -> str:
        """The store as messages name it (a URL without its password).

        >>> abeval.open("demo/demo.duckdb", read_only=True).display()
        'demo/demo.duckdb'
        """
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

        >>> catalog = store.catalog()
        >>> catalog.label("ctr"), catalog.lower_is_better("ctr")
        ('CTR', False)
        """
        from abeval.analysis.team_metrics import read_catalog

        with self._store.connect() as conn:
            return read_catalog(conn)
