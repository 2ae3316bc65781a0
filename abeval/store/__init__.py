"""The event store: SQLAlchemy engines, schema migrations, ingest and the SQL that
returns sufficient statistics. This layer knows SQL and nothing of statistics."""

from abeval.store.engine import Store, open_store, resolve_url

__all__ = ["Store", "open_store", "resolve_url"]
