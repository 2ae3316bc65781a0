"""Integer keys given at ingest (migration 0010): ``request_no`` numbers the
store's (experiment, request_id) pairs and ``item_no`` its item_id values, so that
the replay and the health counts group and join on integers.

The numbers are exact, not hashes: a key the store has numbered already keeps its
number (a click may arrive in a later file than its impression), and each new key
takes the next free one, in the order of the keys; a NULL key has a NULL number.
The same portable SQL numbers the rows of an ingest on DuckDB and PostgreSQL
(:func:`number_ingest`, from the ingest's bookkeeping), and the rows a Spark
ingest stages in its local DuckDB (:func:`number_staged`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class Key:
    """One integer key: its number column and the text columns it numbers."""

    number: str
    text: tuple[str, ...]  # the last one is the key's own (NULL: no number)
    scope: str | None = None  # a column whose values bound the lookup of known keys

    @property
    def table(self) -> str:
        return f"abeval_{self.number}s"


REQUEST = Key("request_no", ("experiment", "request_id"), scope="experiment")
ITEM = Key("item_no", ("item_id",))
KEYS = (REQUEST, ITEM)


def numbering_sql(key: Key, new: str, known: str) -> str:
    """SELECT of ``key``'s text columns and number for the distinct keys of the
    relation ``new`` (rows without numbers yet): the number ``known`` (a relation
    of numbered rows with the same columns) holds for the key, else the next free
    one after the largest there."""
    cols = ", ".join(key.text)
    own = key.text[-1]
    on = " AND ".join(f"o.{c} = n.{c}" for c in key.text)
    order = ", ".join(f"n.{c}" for c in key.text)
    scope = (
        f" AND {key.scope} IN (SELECT DISTINCT {key.scope} FROM {new} WHERE {own} IS NOT NULL)"
        if key.scope
        else ""
    )
    return (
        f"WITH n AS (SELECT DISTINCT {cols} FROM {new} WHERE {own} IS NOT NULL), "
        f"o AS (SELECT DISTINCT {cols}, {key.number} FROM {known} "
        f"WHERE {key.number} IS NOT NULL{scope}), "
        f"b AS (SELECT COALESCE(MAX({key.number}), 0) AS top FROM {known}) "
        f"SELECT {', '.join(f'n.{c}' for c in key.text)}, COALESCE(o.{key.number}, "
        f"(SELECT top FROM b) + ROW_NUMBER() OVER (PARTITION BY o.{key.number} IS NULL "
        f"ORDER BY {order})) AS {key.number} FROM n LEFT JOIN o ON {on}"
    )


def update_sql(key: Key, target: str, where: str) -> str:
    """UPDATE setting ``key``'s number on the rows of ``target`` matching ``where``
    that have none yet, from the table :attr:`Key.table`."""
    on = " AND ".join(f"{target}.{c} = k.{c}" for c in key.text)
    return (
        f"UPDATE {target} SET {key.number} = k.{key.number} FROM {key.table} k "
        f"WHERE {where} AND {target}.{key.number} IS NULL AND {on}"
    )


def key_tables(new: str, known: str) -> list[str]:
    """The statements that make each key's temporary table (:attr:`Key.table`: its
    text columns and number) for the keys of ``new`` against ``known``."""
    statements: list[str] = []
    for key in KEYS:
        statements += [
            f"DROP TABLE IF EXISTS {key.table}",
            f"CREATE TEMPORARY TABLE {key.table} AS {numbering_sql(key, new, known)}",
        ]
    return statements


def key_joins(alias: str) -> tuple[str, str]:
    """(the numbers' select list, the LEFT JOINs to :func:`key_tables`' tables) for
    rows aliased ``alias``: how an insert writes its rows numbered at once."""
    columns, joins = [], []
    for i, key in enumerate(KEYS):
        on = " AND ".join(f"k{i}.{c} = {alias}.{c}" for c in key.text)
        columns.append(f"k{i}.{key.number}")
        joins.append(f"LEFT JOIN {key.table} k{i} ON {on}")
    return ", ".join(columns), " ".join(joins)


def _number(run: Callable[[str], object], new: str, known: str, target: str, where: str) -> None:
    for statement in key_tables(new, known):
        run(statement)
    for key in KEYS:
        run(update_sql(key, target, where))
        run(f"DROP TABLE {key.table}")


def number_ingest(conn: Connection, ingest_id: int) -> None:
    """Number the rows ``ingest_id`` inserted into ``events`` (in the ingest's
    transaction, before anything reads them)."""
    from sqlalchemy import text

    i = int(ingest_id)
    unnumbered = " OR ".join(f"({k.text[-1]} IS NOT NULL AND {k.number} IS NULL)" for k in KEYS)
    found = conn.execute(
        text(f"SELECT 1 FROM events WHERE ingest_id = {i} AND ({unnumbered}) LIMIT 1")
    ).first()
    if found is None:  # inserted with their numbers (PostgreSQL's COPY path)
        return
    new = f"(SELECT * FROM events WHERE ingest_id = {i}) e"
    _number(lambda sql: conn.execute(text(sql)), new, "events", "events", f"events.ingest_id = {i}")


def number_staged(duck: Any, staged: str, known: str) -> None:
    """Number the rows of the local DuckDB table ``staged`` (with empty
    ``request_no`` and ``item_no`` columns) against ``known``, a relation of the
    numbered keys the store holds (``experiment, request_id, request_no`` and
    ``item_id, item_no`` rows, NULL where not that key's)."""
    _number(duck.execute, f"(SELECT * FROM {staged}) e", known, staged, "1 = 1")
