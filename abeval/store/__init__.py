"""The event store: SQLAlchemy engines, schema migrations, ingest and the SQL that
returns sufficient statistics. This layer knows SQL and nothing of statistics.

``Database``, ``open_store`` and ``resolve_url`` load :mod:`abeval.store.engine` when
first asked for, so that a command that needs only a small module of this package
(``abeval evaluate`` reads :mod:`abeval.store.quoting`) does not pay for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.store.engine import Database, open_store, resolve_url

__all__ = ["Database", "open_store", "resolve_url"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from abeval.store import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
