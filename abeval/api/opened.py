"""What every part of an open store's API shares: the store's database, closing it, and
its metric catalog (the built-in and team-defined metrics a name is checked against
and a result is computed with)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database
    from abeval.store.held import HeldStore


def _keeping(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, after which the kept summaries its reads computed are written
    (:meth:`abeval.store.held.HeldStore.keep_summaries`), once the outermost call
    of the store's methods returns."""

    @functools.wraps(method)
    def call(self: Opened, *args: Any, **kwargs: Any) -> Any:
        held = self._held
        held.calls += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            held.calls -= 1
            if held.calls == 0 and held.keeping:
                held.keep_summaries()

    return call


class Opened:
    """An open store (the base of :class:`abeval.api.Store` and its parts): a DuckDB
    file is held read-only between calls and opened for writing only for a write
    (:mod:`abeval.store.held`); after :meth:`close` every call raises
    :class:`~abeval.errors.StoreClosed`."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Every public method of a store refuses a misspelt keyword with a
        # did-you-mean (abeval.api.options.keywords_checked), checked once here.
        super().__init_subclass__(**kwargs)
        from abeval.api.options import keywords_checked

        for name, member in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(member):
                setattr(cls, name, _keeping(keywords_checked(member)))

    def __init__(self, held: HeldStore) -> None:
        self._held = held

    @property
    def _store(self) -> Database:
        """The database to read now (:class:`~abeval.errors.StoreClosed` once closed)."""
        return self._held.current()

    def _writing(self) -> AbstractContextManager[Database]:
        """The database to write, for one ``with`` block (the writer lock held for it)."""
        return self._held.writing()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the store for good (a ``with`` block closes it on leaving): a later
        call raises :class:`~abeval.errors.StoreClosed`, and the same store can be
        opened again (``abeval.open``).

        >>> store = abeval.open("demo/demo.duckdb", read_only=True)
        >>> store.close()
        """
        self._held.close()

    @property
    def display(self) -> str:
        """The store as messages name it (a URL without its password).

        >>> abeval.open("demo/demo.duckdb", read_only=True).display()
        'demo/demo.duckdb'
        """
        return self._held.display

    def __repr__(self) -> str:
        closed = " (closed)" if self._held.closed else ""
        return f"<abeval store {self.display}{closed}>"

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
