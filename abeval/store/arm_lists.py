"""An experiment's arms as the store keeps them: one JSON array of names
(``["bert,v2", "control"]``) in ``experiments.arms``, so that a name keeps every
character the event format allows, commas included (migration 0007).

The array is built by :data:`ARMS_JSON`, one SQL expression that DuckDB,
PostgreSQL and Spark (through :mod:`abeval.store.backends.spark.dialect`) all run: the
names sorted, each a JSON string with ``\\`` and ``"`` escaped. Other control
characters are left as they are, which :func:`parse_arms` reads (a JSON reader
that is not strict about them); a Spark store written before 0007 may still hold
a comma-separated list, read as such until its next ingest rewrites it.
"""

from __future__ import annotations

import json

_QUOTED = "'\"' || REPLACE(REPLACE(arm, '\\', '\\\\'), '\"', '\\\"') || '\"'"

#: The sorted JSON array of the distinct ``arm`` values of a group of events.
ARMS_JSON = f"'[' || STRING_AGG(DISTINCT {_QUOTED}, ',' ORDER BY {_QUOTED}) || ']'"


def parse_arms(stored: object) -> list[str]:
    """The arm names of an ``experiments.arms`` value, sorted by code point."""
    if stored is None:
        return []
    value = str(stored)
    if value.startswith("["):
        try:
            names = json.loads(value, strict=False)
        except ValueError:
            names = None
        if isinstance(names, list):
            return sorted(str(n) for n in names)
    return sorted(a for a in value.split(",") if a)  # a Spark store written before 0007
