"""A DuckDB store's file: its URL from a path, how it is shown, and the checks
before DuckDB opens it."""

from __future__ import annotations

import shlex
from pathlib import Path

from abeval.errors import StoreError
from abeval.files import is_data_file
from abeval.store.backends.url_secrets import masked_url

#: The store a command opens without ``--db`` or ``ABEVAL_DB``.
DEFAULT_DB = "abeval.duckdb"


def file_url(path: str) -> str:
    """The SQLAlchemy URL of the DuckDB file ``path`` (made absolute)."""
    return "duckdb:///" + str(Path(path).expanduser().resolve())


def shown_path(url: str) -> str | None:
    """The file path of a DuckDB URL as it may be shown (``:memory:`` for none);
    None when ``url`` is no valid URL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    return masked_url(parsed.database or ":memory:")


def check_duckdb_file(url: str, shown: str, must_exist: bool) -> None:
    """Refuse a ``--db`` that is not a DuckDB store before DuckDB opens it: DuckDB
    opens an existing file of another kind (a CSV, a Parquet file) as an empty
    in-memory database, so an ingest into it would be lost without a word."""
    from sqlalchemy.engine import make_url

    path = make_url(url).database
    if not path or path.startswith(":memory:"):
        return
    file = Path(path)
    # `--db events.csv` is a slip for `abeval ingest events.csv`.
    if is_data_file(file):
        raise StoreError(
            f"{{db}} {shown} names an event file, not a store; the store is a DuckDB file "
            f"such as {DEFAULT_DB} (load events with "
            f"`abeval ingest {shlex.quote(shown)} --db {DEFAULT_DB}`)",
            parameters=("db",),
        )
    if not file.exists():
        if must_exist:
            raise StoreError(
                f"no store at {shown}; load events first with "
                f"`abeval ingest FILE --db {shlex.quote(shown)}`"
            )
        return
    if file.is_dir():
        raise StoreError(
            f"{{db}} {shown} is a directory; name a file such as {DEFAULT_DB} in it",
            parameters=("db",),
        )
    try:
        with file.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise StoreError(f"cannot open the store {shown}: {exc.strerror}") from None
    if head and head[8:12] != b"DUCK":
        raise StoreError(
            f"{shown} is not a DuckDB file, so not an abeval store; pass another {{db}}",
            parameters=("db",),
        )
