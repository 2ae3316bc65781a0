"""Integer keys given at ingest (migration 0010): ``request_no`` numbers the
store's (experiment, request_id) pairs and ``item_no`` its item_id values, so that
the replay and the health counts group and join on integers.

The numbers are exact: the same number exactly when the same key, NULL exactly
when the key is. Where the engine has a key hash (``Backend.key_hash``: DuckDB),
the ``INSERT ... SELECT`` of an ingest writes each row's number as the 63-bit hash
of its key (:func:`hashed_columns`), so the rows are written once; two queries
then check what the ingest touched (:func:`clash_sql`: every stored row of its
experiments and items carries its key's hash, and none of its numbers belongs to
two keys), and if either finds a row, the ingest's rows are numbered exactly
instead. Exact numbering (:func:`numbering_sql`) gives a key the store has
numbered already its number (a click may arrive in a later file than its
impression), and each new key the next free negative number, so exact numbers
never meet hashes. PostgreSQL's COPY path and Spark's ingest (:func:`number_staged`)
number exactly by looking the keys up as they insert.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.backends.base import Backend


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
    one below the smallest there and below 0 (exact numbers are negative, so they
    never meet a hash's, which are not)."""
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
        f"b AS (SELECT LEAST(COALESCE(MIN({key.number}), 0), 0) AS low FROM {known}) "
        f"SELECT {', '.join(f'n.{c}' for c in key.text)}, COALESCE(o.{key.number}, "
        f"(SELECT low FROM b) - ROW_NUMBER() OVER (PARTITION BY o.{key.number} IS NULL "
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


def hash_sql(backend: Backend, key: Key, alias: str = "") -> str | None:
    """``key``'s number as the engine's hash of its text columns (NULL when its
    own text is), or None when the engine's ingest does not hash."""
    found = backend.key_hash([f"{alias}{c}" for c in key.text])
    if found is None:
        return None
    return f"CASE WHEN {alias}{key.text[-1]} IS NULL THEN NULL ELSE {found} END"


def hashed_columns(backend: Backend, alias: str = "") -> tuple[str, str]:
    """(``, request_no, item_no``, ``, <hash>, <hash>``) to append to an
    ``INSERT ... SELECT``'s column and select lists so that it writes its rows
    numbered (:func:`hash_sql`); empty strings when the engine does not hash."""
    found = [(k.number, hash_sql(backend, k, alias)) for k in KEYS]
    if any(h is None for _, h in found):
        return "", ""
    return "".join(f", {n}" for n, _ in found), "".join(f", {h}" for _, h in found)


def clash_sql(key: Key, hashed: str, mine: str) -> list[str]:
    """Queries that return a row when the hashed numbers of the rows matching
    ``mine`` are not exact: a row of one of their keys whose number is not the
    hash of its key (numbered exactly, or by another hash: e.g. after an engine
    upgrade), or one of their numbers that two different keys share."""
    own, n = key.text[-1], key.number
    scope = key.scope or own
    differs = " OR ".join(f"MIN({c}) <> MAX({c})" for c in key.text)
    return [
        f"SELECT 1 FROM events WHERE {scope} IN (SELECT DISTINCT {scope} FROM events "
        f"WHERE {mine}) AND {own} IS NOT NULL AND ({n} IS NULL OR {n} <> {hashed}) LIMIT 1",
        f"SELECT {n} FROM events WHERE {n} IN (SELECT DISTINCT {n} FROM events WHERE {mine}) "
        f"GROUP BY {n} HAVING {differs} LIMIT 1",
    ]


def _exact(conn: Connection, key: Key, mine: str) -> None:
    """Number exactly (:func:`numbering_sql`) the rows of ``key`` that have no
    number, after clearing the numbers of the rows matching ``mine``."""
    from sqlalchemy import text

    if mine:
        conn.execute(text(f"UPDATE events SET {key.number} = NULL WHERE {mine}"))
    new = f"(SELECT * FROM events WHERE {key.number} IS NULL) e"
    for statement in [
        f"DROP TABLE IF EXISTS {key.table}",
        f"CREATE TEMPORARY TABLE {key.table} AS {numbering_sql(key, new, 'events')}",
        update_sql(key, "events", "1 = 1"),
        f"DROP TABLE {key.table}",
    ]:
        conn.execute(text(statement))


def _checked(conn: Connection, key: Key, mine: str) -> None:
    """Keep the hashed numbers of the rows matching ``mine`` if they are exact
    (:func:`clash_sql`), else number those rows exactly."""
    from sqlalchemy import text

    from abeval.store.backends import backend_of

    hashed = hash_sql(backend_of(conn), key)
    if hashed is None:
        return
    if any(conn.execute(text(q)).first() is not None for q in clash_sql(key, hashed, mine)):
        _exact(conn, key, mine)


def number_ingest(conn: Connection, ingest_id: int) -> None:
    """Number the rows ``ingest_id`` inserted into ``events`` (in the ingest's
    transaction, before anything reads them): rows inserted without numbers are
    numbered exactly; rows inserted with their hashes (:func:`hashed_columns`)
    keep them when they are exact, else are numbered exactly."""
    from sqlalchemy import text

    mine = f"ingest_id = {int(ingest_id)}"
    for key in KEYS:
        unnumbered = f"{key.text[-1]} IS NOT NULL AND {key.number} IS NULL"
        found = conn.execute(text(f"SELECT 1 FROM events WHERE {mine} AND {unnumbered} LIMIT 1"))
        if found.first() is not None:
            _exact(conn, key, "")
        else:
            _checked(conn, key, mine)


def number_stored(conn: Connection) -> None:
    """Number every row of ``events`` (migration 0010): by the engine's hash when
    it hashes and the hashes are exact, else exactly."""
    from sqlalchemy import text

    from abeval.store.backends import backend_of

    for key in KEYS:
        hashed = hash_sql(backend_of(conn), key)
        if hashed is None:
            _exact(conn, key, "")
            continue
        conn.execute(text(f"UPDATE events SET {key.number} = {hashed}"))
        _checked(conn, key, "1 = 1")


def number_staged(duck: Any, staged: str, known: str) -> None:
    """Number the rows of the local DuckDB table ``staged`` (with empty
    ``request_no`` and ``item_no`` columns) against ``known``, a relation of the
    numbered keys the store holds (``experiment, request_id, request_no`` and
    ``item_id, item_no`` rows, NULL where not that key's)."""
    _number(duck.execute, f"(SELECT * FROM {staged}) e", known, staged, "1 = 1")
