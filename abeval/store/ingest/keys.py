"""Integer keys given at ingest (migration 0010): ``request_no`` numbers the
store's (experiment, request_id) pairs and ``item_no`` its item_id values, so that
the replay and the health counts group and join on integers.

The numbers are exact and dense: the same number exactly when the same key, NULL
exactly when the key is, and the n keys a store has seen numbered 1…n. Each
key's numbers live in a dictionary table (``request_keys``, ``item_keys``).
New keys are added to the dictionaries by :func:`add_keys`: one distinct pass
over the rows, both keys at once, the new keys numbered from the dictionary's
largest number on. A DuckDB store's direct load inserts its rows without
numbers and numbers them in place afterwards, from the inserted rows' key
columns (:func:`number_ingest`: the keys pass, then an ``UPDATE`` per key); this
costs less than a second read of the file to find the keys before the insert.
The staged loads, whose rows are already in a table, add their keys first and
write their rows with the numbers joined from the dictionaries
(:func:`key_joins`). :func:`number_stored` numbers a store's rows at migration
0010. A Spark store has no dictionary tables; its ingest numbers its staged rows
against the numbers its events hold (:func:`number_staged`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class Key:
    """One integer key: its number column, the text columns it numbers and its
    dictionary table."""

    number: str
    text: tuple[str, ...]  # the last one is the key's own (NULL: no number)
    table: str


REQUEST = Key("request_no", ("experiment", "request_id"), "request_keys")
ITEM = Key("item_no", ("item_id",), "item_keys")
KEYS = (REQUEST, ITEM)

_FOUND = "abeval_found_keys"  # the temporary table of a pass's distinct keys


def found_keys_sql(rows: str) -> str:
    """The distinct keys of the relation ``rows`` in one pass: (experiment,
    request_id) pairs with ``for_item`` false, item_id values with it true."""
    return (
        "SELECT experiment, request_id, item_id, GROUPING(experiment) = 1 AS for_item "
        f"FROM {rows} GROUP BY GROUPING SETS ((experiment, request_id), (item_id))"
    )


def add_keys_sql(key: Key, found: str) -> str:
    """INSERT into ``key``'s dictionary of the keys of ``found`` (the table of
    :func:`found_keys_sql`) it lacks, numbered from its largest number on."""
    cols = ", ".join(key.text)
    mine = f"{'' if key is ITEM else 'NOT '}for_item AND {key.text[-1]} IS NOT NULL"
    on = " AND ".join(f"d.{c} = n.{c}" for c in key.text)
    order = ", ".join(f"n.{c}" for c in key.text)
    return (
        f"INSERT INTO {key.table} ({cols}, {key.number}) "
        f"SELECT {order}, (SELECT COALESCE(MAX({key.number}), 0) FROM {key.table}) "
        f"+ ROW_NUMBER() OVER (ORDER BY {order}) FROM {found} n WHERE {mine} "
        f"AND NOT EXISTS (SELECT 1 FROM {key.table} d WHERE {on})"
    )


def add_keys(run: Callable[[str], object], rows: str) -> None:
    """Add the keys of the relation ``rows`` to the dictionaries (``run``
    executes one statement)."""
    run(f"DROP TABLE IF EXISTS {_FOUND}")
    run(f"CREATE TEMPORARY TABLE {_FOUND} AS {found_keys_sql(rows)}")
    for key in KEYS:
        run(add_keys_sql(key, _FOUND))
    run(f"DROP TABLE {_FOUND}")


def key_joins(alias: str) -> tuple[str, str]:
    """(the numbers' select list, the LEFT JOINs to the dictionaries) for rows
    aliased ``alias``: how an insert writes its rows numbered at once."""
    columns, joins = [], []
    for i, key in enumerate(KEYS):
        on = " AND ".join(f"k{i}.{c} = {alias}.{c}" for c in key.text)
        columns.append(f"k{i}.{key.number}")
        joins.append(f"LEFT JOIN {key.table} k{i} ON {on}")
    return ", ".join(columns), " ".join(joins)


def _update_sql(key: Key, target: str) -> str:
    """UPDATE setting ``key``'s number on the rows of ``target`` that have none,
    from its dictionary."""
    on = " AND ".join(f"{target}.{c} = k.{c}" for c in key.text)
    return (
        f"UPDATE {target} SET {key.number} = k.{key.number} FROM {key.table} k "
        f"WHERE {target}.{key.number} IS NULL AND {on}"
    )


def _number_in_place(run: Callable[[str], object], target: str, where: str) -> None:
    """Number the rows of ``target`` matching ``where`` that have no numbers."""
    unnumbered = " OR ".join(f"{k.number} IS NULL" for k in KEYS)
    add_keys(run, f"(SELECT * FROM {target} WHERE {where} AND ({unnumbered})) e")
    for key in KEYS:
        run(_update_sql(key, target))


def number_ingest(conn: Connection, ingest_id: int) -> None:
    """Number the rows ``ingest_id`` put into ``events`` without numbers. Every
    load numbers its rows as it inserts them, so this finds none and writes
    nothing; it is the check that none was left (an ``UPDATE`` of every row of a
    large ingest would hold them all in memory until the commit)."""
    from sqlalchemy import text

    mine = f"ingest_id = {int(ingest_id)}"
    unnumbered = " OR ".join(f"({k.text[-1]} IS NOT NULL AND {k.number} IS NULL)" for k in KEYS)
    found = conn.execute(text(f"SELECT 1 FROM events WHERE {mine} AND ({unnumbered}) LIMIT 1"))
    if found.first() is not None:
        _number_in_place(lambda s: conn.execute(text(s)), "events", mine)


def number_stored(conn: Connection) -> None:
    """Fill the dictionaries from the rows of ``events`` and number them
    (migration 0010)."""
    from sqlalchemy import text

    _number_in_place(lambda s: conn.execute(text(s)), "events", "1 = 1")


def number_staged(duck: Any, staged: str, known: str) -> None:
    """Number the rows of the local DuckDB table ``staged`` (with empty
    ``request_no`` and ``item_no`` columns) against ``known``, a relation of the
    numbered keys the store holds (``experiment, request_id, request_no`` and
    ``item_id, item_no`` rows, NULL where not that key's, and one row of NULL
    keys with the largest numbers): a local copy of the dictionaries, the staged
    rows' new keys added to it, then the numbers joined in."""
    for key in KEYS:
        cols = ", ".join((*key.text, key.number))
        duck.execute(
            f"CREATE OR REPLACE TEMPORARY TABLE {key.table} AS SELECT {cols} FROM {known} "
            f"WHERE {key.number} IS NOT NULL"
        )
    _number_in_place(duck.execute, staged, "1 = 1")
    for key in KEYS:
        duck.execute(f"DROP TABLE {key.table}")
