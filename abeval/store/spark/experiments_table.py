"""The ``experiments`` table on Spark: small, and rewritten whole by each writer.

Its rows change when an ingest adds events (arms, first and last time,
:mod:`abeval.store.spark.landing`) and when ``abeval experiment set`` or
``unset`` records settings (control arm, split, window, configuration). Either
way, under the store's writer lock (:mod:`abeval.store.spark.lock`):

1. the whole new content is written, mode ``error``, into a new folder
   ``<root>/v<N>-<token>``: ``N`` one more than the version the table reads,
   the random token so that it never meets the folder of a write that failed;
2. ``ALTER TABLE experiments SET LOCATION`` that folder: one metastore
   operation, the commit. Before it every reader sees the old rows, after it
   the new ones.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from abeval.store.spark.schema import COLUMNS, set_location_sql

TABLE = "experiments"
_FOLDER = re.compile(r"/v(\d+)(?:-[0-9a-f]+)?$")


def location(session: Any) -> str:
    """The folder the table reads (its live version)."""
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {TABLE}").collect()
    for row in rows:
        if (row[0] or "").strip() == "Location":
            return str(row[1]).strip()
    raise LookupError(f"no location for {TABLE}")  # pragma: no cover (a Parquet table has one)


def number(folder: str) -> int:
    """The version number of a folder ``.../v<N>-<token>`` (``v0``: the first, empty one)."""
    found = _FOLDER.search(folder.rstrip("/"))
    return int(found.group(1)) if found else 0


def next_folder(live: str) -> str:
    """A new version's folder beside the live one ``live``."""
    root = live.rstrip("/").rsplit("/", 1)[0]
    return f"{root}/v{number(live) + 1}-{uuid.uuid4().hex[:8]}"


def publish(session: Any, frame: Any) -> str:
    """Make the rows of the DataFrame ``frame`` the table's whole content (module
    docstring); return the new version's folder."""
    folder = next_folder(location(session))
    typed = frame.selectExpr(*(f"CAST({c} AS {t}) AS {c}" for c, t in COLUMNS[TABLE]))
    typed.write.mode("error").parquet(folder)
    session.sql(set_location_sql(TABLE, folder)).collect()
    return folder


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
    from abeval.store.spark.dialect import to_spark

    sql, params = change_settings_sql(values)
    return publish(session, session.sql(to_spark(sql), args={**params, "e": experiment}))
