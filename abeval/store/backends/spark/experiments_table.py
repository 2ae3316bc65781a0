"""The ``experiments`` table on Spark: small, and rewritten whole by each writer.

Its rows change when an ingest adds events (arms, first and last time,
:mod:`abeval.store.backends.spark.landing`) and when ``abeval experiment set`` or
``unset`` records settings (control arm, split, window, configuration). Either
way, under the store's writer lock (:mod:`abeval.store.backends.spark.lock`):

1. the whole new content is written, mode ``error``, as a new managed Parquet
   table ``experiments__v<N>_<token>``: ``N`` one more than the version the
   table reads, the random token so that it never meets a write that failed;
2. ``ALTER TABLE experiments SET LOCATION`` that version's folder: one metastore
   operation, the commit. Before it every reader sees the old rows, after it
   the new ones;
3. the old versions are dropped (managed tables: their folders go with them),
   **but the live one and the one before it**. A reader lists the files of the
   version the table pointed at when its query was planned; a query planned
   before the last commit still reads the previous version, so that one stays
   until the next commit. (Reading ``experiments`` is one small scan; a query
   that outlived two commits fails with Spark's file-not-found and runs again.)
   A failure here leaves them for the next write.

The table itself is external (``abeval.store.backends.spark.schema``): its first, empty
version is the folder ``<folder>/v0``, and an earlier abeval wrote versions as
folders ``<folder>/v<N>-<token>``, which no table owns. After each commit those
folders, but the live one and the one before it, are removed by abeval itself
when it can reach them (a warehouse on this machine or a shared folder:
:func:`abeval.store.backends.spark.parquet_out.local_folder`); Spark Connect cannot delete
a folder, so on a remote warehouse they stay (remove them with the storage's
tools).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from abeval.store.backends.spark.schema import COLUMNS, set_location_sql

TABLE = "experiments"
#: A version's folder: ``v0``, ``v<N>-<token>`` (earlier abeval) or the managed
#: table ``experiments__v<N>_<token>``.
_FOLDER = re.compile(r"(?:/|__)v(\d+)(?:[-_][0-9a-f]+)?$")
#: A version's folder that no table owns: ``v0``, or ``v<N>-<token>`` (earlier abeval).
_OLD = re.compile(r"/v(?:0|\d+-[0-9a-f]+)$")


def location(session: Any, table: str = TABLE) -> str:
    """The folder ``table`` reads (``experiments``: its live version)."""
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    for row in rows:
        if (row[0] or "").strip() == "Location":
            return str(row[1]).strip()
    raise LookupError(f"no location for {table}")  # pragma: no cover (a Parquet table has one)


def number(folder: str) -> int:
    """The version number of a folder ``.../v<N>-<token>`` (``v0``: the first, empty one)."""
    found = _FOLDER.search(folder.rstrip("/"))
    return int(found.group(1)) if found else 0


def publish(session: Any, frame: Any) -> str:
    """Make the rows of the DataFrame ``frame`` the table's whole content (module
    docstring); return the new version's folder."""
    from abeval.store.backends.spark import own_tables

    live = location(session)
    name = own_tables.version_name(TABLE, number(live) + 1)
    typed = frame.selectExpr(*(f"CAST({c} AS {t}) AS {c}" for c, t in COLUMNS[TABLE]))
    typed.write.format("parquet").mode("error").saveAsTable(name)
    folder = location(session, name)
    session.sql(set_location_sql(TABLE, folder)).collect()
    drop_old(session, keep=(folder, live))
    return folder


def drop_old(session: Any, keep: tuple[str, ...]) -> list[str]:
    """Drop the version tables whose folder is not in ``keep`` (the live version
    and the one before it); return their names. A failure leaves them for the
    next write (the commit is done)."""
    from abeval.store.backends.spark import own_tables

    kept = {k.rstrip("/") for k in keep}
    dropped: list[str] = []
    with suppress(Exception):
        for name in own_tables.versions(session, TABLE):
            if location(session, name).rstrip("/") not in kept:
                session.sql(f"DROP TABLE IF EXISTS {name}").collect()
                dropped.append(name)
    with suppress(Exception):
        dropped += [str(f) for f in remove_old_folders(session, keep)]
    return dropped


def remove_old_folders(session: Any, keep: tuple[str, ...]) -> list[Path]:
    """Remove the version folders ``<folder>/v<N>-<token>`` an earlier abeval wrote
    (and the first, empty ``v0``) but those in ``keep``, where this process can
    reach them; return the folders removed."""
    from abeval.store.backends.spark.parquet_out import local_folder
    from abeval.store.backends.spark.schema import WAREHOUSE_ENV, database_folder

    roots = {os.environ.get(WAREHOUSE_ENV) or database_folder(session)}
    roots = {f"{r.rstrip('/')}/{TABLE}" for r in roots}
    roots |= {k.rstrip("/").rsplit("/", 1)[0] for k in keep if _OLD.search(k.rstrip("/"))}
    kept = {Path(unquote(urlparse(k).path.rstrip("/"))) for k in keep}
    removed = []
    for root in roots:
        here = local_folder(root)
        if here is None or not here.is_dir():
            continue
        for folder in sorted(here.iterdir()):
            if folder.is_dir() and _OLD.search("/" + folder.name) and folder not in kept:
                shutil.rmtree(folder)
                removed.append(folder)
    return removed


def change_settings_sql(values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The table's content with the row of experiment ``:e`` changed: each column of
    ``values`` set to its value (``None``: cleared), the others kept (Spark SQL and
    its parameters, without ``e``)."""
    columns = [c for c, _ in COLUMNS[TABLE]]
    unknown = set(values) - set(columns) - {"experiment"}
    if unknown:
        raise ValueError(f"no such column of {TABLE}: {', '.join(sorted(unknown))}")
    params: dict[str, Any] = {}
    parts = []
    for i, column in enumerate(columns):
        if column not in values or column == "experiment":
            parts.append(column)
            continue
        value = values[column]
        if value is None:
            new = "NULL"
        else:
            new = f":v{i}"
            params[f"v{i}"] = value
        parts.append(f"CASE WHEN experiment = :e THEN {new} ELSE {column} END AS {column}")
    return f"SELECT {', '.join(parts)} FROM {TABLE}", params


def change_settings(session: Any, experiment: str, values: Mapping[str, Any]) -> str:
    """Record ``values`` (column → value, ``None`` clears it) for ``experiment`` as a
    new version of the table; the caller holds the writer lock."""
    from abeval.store.backends.spark.dialect import to_spark

    sql, params = change_settings_sql(values)
    return publish(session, session.sql(to_spark(sql), args={**params, "e": experiment}))
