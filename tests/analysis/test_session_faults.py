"""A store fault while the report's session opens (its first read) is the store's
one-line error, as anywhere later in the report: the connection's own exit sees it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from abeval.analysis import session as session_module
from abeval.analysis.online_metrics import BUILTIN_CATALOG
from abeval.analysis.session import ExperimentSession
from abeval.errors import StoreError


class _LostServer(Exception):
    pass


class _Store:
    """A store whose connection turns a lost server into its one-line error, as the
    Spark store's ``faults`` does."""

    closed = False
    #: where parts are kept the session reads the experiment's row first, else
    #: (Spark) its facts
    backend = SimpleNamespace(runs_migrations=False)

    @contextmanager
    def connect(self) -> Iterator[Any]:
        try:
            yield object()
        except _LostServer:
            raise StoreError("the store sc://h:1 stopped answering") from None
        finally:
            _Store.closed = True


@pytest.mark.parametrize(
    ("first_read", "keeps"), [("read_catalog", False), ("read_facts", False), ("read_row", True)]
)
def test_a_fault_in_the_first_read_is_the_stores_error(
    monkeypatch: pytest.MonkeyPatch, first_read: str, keeps: bool
) -> None:
    """The session's first reads are the store's metric catalog, then the
    experiment's facts (its row alone where parts are kept): a lost server in
    either is the store's one line."""

    def lost(*args: Any) -> None:
        raise _LostServer("UNAVAILABLE")

    def no_metrics(conn: Any) -> Any:
        return BUILTIN_CATALOG

    _Store.closed = False
    monkeypatch.setattr(session_module, "read_catalog", no_metrics)
    monkeypatch.setattr(session_module, first_read, lost)
    monkeypatch.setattr(_Store, "backend", SimpleNamespace(runs_migrations=keeps))
    session = ExperimentSession(_Store(), "exp")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="stopped answering"), session:
        pass
    assert _Store.closed
