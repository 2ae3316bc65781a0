"""The SQL of a table read in place (docs/usage.md#tables-read-in-place): what the
engine says the table's columns are, and the temporary views that present it in
the event format, under the names the analysis reads (``events``,
``experiments``).

A temporary view shadows the store's table of the same name for the one
connection that creates it: DuckDB looks in its ``temp`` catalog first,
PostgreSQL in ``pg_temp``, Spark in its temporary views. So the analysis SQL
stays as it is, and it runs inside the engine over the user's table: the
experiment's filter is part of the view, which DuckDB pushes into a Parquet
scan. The view is plain SQL (CASE, CAST, IN); what differs by engine (describing
the table, the attributes' JSON, a timestamp with a zone, the temporary views'
names) is the store's backend's (:mod:`abeval.store.backends`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval.errors import InputError
from abeval.store.arm_lists import ARMS_JSON
from abeval.store.backends import Backend, backend_of
from abeval.store.events_format import KNOWN
from abeval.store.quoting import quote_ident, quote_literal
from abeval.store.source_mapping import (
    Mapping,
    Resolved,
    check_table_name,
    file_reader,
    is_file_reference,
    resolve,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

_NULLS = {
    "position": "INTEGER",
    "value": "DOUBLE PRECISION",
    "propensity": "DOUBLE PRECISION",
    "propensity_given_above": "DOUBLE PRECISION",
}
VIEWS = ("experiments", "events")  # dropped in this order


@dataclass(frozen=True)
class Relation:
    """Where a source's rows are: ``sql`` goes after ``FROM``; ``shown`` is the
    ``--table`` as the user gave it (a path made absolute)."""

    sql: str
    shown: str


def relation(conn: Connection, table: str) -> Relation:
    """``--table`` as SQL: a table of the store's database as written, or on DuckDB
    Parquet/CSV files through ``read_parquet``/``read_csv``."""
    if is_file_reference(table):
        backend = backend_of(conn)
        if not backend.reads_files_in_place:
            raise InputError(
                f"{{table}} {table}: files are read in place only by a DuckDB store; "
                f"this store is {backend.name} (name one of its tables, or load the "
                "files with `abeval ingest`)",
                parameters=("table",),
            )
        path, fmt = file_reader(table)
        reader = "read_parquet" if fmt == "parquet" else "read_csv"
        return Relation(f"{reader}({quote_literal(path)})", path)
    check_table_name(table)
    return Relation(table, table)


def describe(conn: Connection, rel: Relation) -> dict[str, str]:
    """The relation's columns and their SQL types, in order; one line when it does
    not exist (:meth:`abeval.store.backends.Backend.describe`)."""
    return backend_of(conn).describe(conn, rel)


def checked(conn: Connection, table: str, mapping: Mapping) -> tuple[Relation, Resolved]:
    """The relation and the mapping checked against its columns."""
    rel = relation(conn, table)
    return rel, resolve(rel.shown, mapping, describe(conn, rel))


def _col(r: Resolved, fld: str) -> str | None:
    column = r.columns.get(fld)
    return quote_ident(column) if column is not None else None


def as_text(r: Resolved, fld: str) -> str:
    """A text field as VARCHAR (whole numbers cast)."""
    col = _col(r, fld)
    if col is None:
        return "CAST(NULL AS VARCHAR)"
    return col if r.families[fld] == "text" else f"CAST({col} AS VARCHAR)"


def experiment_text(r: Resolved) -> str:
    """The experiment of a row: its column, or the source's one experiment."""
    return as_text(r, "experiment") if r.experiment is None else quote_literal(r.experiment)


def _field(backend: Backend, r: Resolved, fld: str) -> str:
    col = _col(r, fld)
    if fld == "ts":
        assert col is not None
        if r.families["ts"] == "timestamptz":
            return backend.utc_timestamp(col)
        return f"CAST({col} AS TIMESTAMP)"
    if fld in _NULLS:
        return f"CAST({col if col is not None else 'NULL'} AS {_NULLS[fld]})"
    return as_text(r, fld)


def event_type_case(r: Resolved) -> str:
    """The event type of a row: CASE over the mapped values (NULL for the others)."""
    whens = " ".join(
        f"WHEN {quote_literal(v)} THEN {quote_literal(t)}" for v, t in sorted(r.values.items())
    )
    return f"CASE {as_text(r, 'event_type')} {whens} END"


def mapped_values(r: Resolved) -> str:
    return ", ".join(quote_literal(v) for v in sorted(r.values))


def _attributes(backend: Backend, r: Resolved) -> str:
    """The attributes as JSON text, names sorted (as ingest writes them)."""
    if not r.attributes:
        return "CAST(NULL AS VARCHAR)"
    pairs = ", ".join(
        f"{quote_literal(n)}, CAST({quote_ident(c)} AS VARCHAR)" for n, c in r.attributes.items()
    )
    return f"CAST({backend.json_object(pairs)} AS VARCHAR)"


def events_select(backend: Backend, rel: Relation, r: Resolved, experiment: str | None) -> str:
    """The source's rows in the event format: the columns of the ``events``
    table, rows whose event type maps to nothing left out; only ``experiment``'s
    rows when it is given (a filter the engine pushes into its scan)."""
    exp = experiment_text(r)
    where = f"{as_text(r, 'event_type')} IN ({mapped_values(r)})"
    if experiment is not None:
        where += f" AND {exp} = {quote_literal(experiment)}"
        exp = quote_literal(experiment)
    fields = [
        f"CAST({exp} AS VARCHAR) AS experiment"
        if f == "experiment"
        else f"{_field(backend, r, f)} AS {f}"
        for f in KNOWN
        if f != "event_type"
    ]
    fields.insert(KNOWN.index("event_type"), f"{event_type_case(r)} AS event_type")
    rows = (
        f"SELECT {', '.join(fields)}, {_attributes(backend, r)} AS attributes, "
        "CAST(NULL AS VARCHAR) AS row_key, CAST(NULL AS BIGINT) AS ingest_id "
        f"FROM {rel.sql} WHERE {where}"
    )
    # The integer keys an ingest gives (migration 0010) are the text keys here: the
    # analysis only groups, joins and compares them, so the numbers are the same.
    return f"SELECT *, {KEYS_IN_PLACE} FROM ({rows}) s"


#: ``request_no`` and ``item_no`` of a table read in place: its text keys.
KEYS_IN_PLACE = "request_id AS request_no, item_id AS item_no"


EXPERIMENTS_SELECT = (
    f"SELECT experiment, {ARMS_JSON} AS arms, "
    "MIN(ts) AS first_ts, MAX(ts) AS last_ts, CAST(NULL AS VARCHAR) AS control_arm, "
    "CAST(NULL AS VARCHAR) AS split, CURRENT_TIMESTAMP AS updated_at, "
    "CAST(NULL AS TIMESTAMP) AS window_from, CAST(NULL AS TIMESTAMP) AS window_to, "
    "CAST(NULL AS VARCHAR) AS config "
    "FROM events GROUP BY experiment"
)


@contextmanager
def contract_views(
    conn: Connection, rel: Relation, r: Resolved, experiment: str | None
) -> Iterator[None]:
    """Temporary views ``events`` and ``experiments`` over the source for the block
    (only ``experiment``'s rows when it is given); dropped after."""
    from sqlalchemy import text

    select = events_select(backend_of(conn), rel, r, experiment)
    conn.execute(text(f"CREATE TEMPORARY VIEW events AS {select}"))
    try:
        conn.execute(text(f"CREATE TEMPORARY VIEW experiments AS {EXPERIMENTS_SELECT}"))
    except BaseException:
        _drop(conn, quietly=True)
        raise
    try:
        yield
    except BaseException:
        _drop(conn, quietly=True)  # an aborted PostgreSQL transaction drops them itself
        raise
    _drop(conn, quietly=False)


def _drop(conn: Connection, quietly: bool) -> None:
    from sqlalchemy import text

    backend = backend_of(conn)
    for view in VIEWS:
        sql = text(f"DROP VIEW IF EXISTS {backend.temporary_name(view)}")
        if quietly:
            with suppress(Exception):
                conn.execute(sql)
        else:
            conn.execute(sql)


def counts_sql(rel: Relation, r: Resolved, experiment: str | None) -> str:
    """Rows per (experiment, event-type value, mapped or not): what ``source add``
    reports and the report's count of unmapped events."""
    exp = experiment_text(r)
    where = f" WHERE {exp} = :experiment" if experiment is not None else ""
    et = as_text(r, "event_type")
    return (
        f"SELECT {exp} AS experiment, {et} AS event_type, "
        f"CASE WHEN {et} IN ({mapped_values(r)}) THEN 1 ELSE 0 END AS mapped, COUNT(*) AS n "
        f"FROM {rel.sql}{where} GROUP BY {exp}, {et}"
    )


def unmapped_counts(
    conn: Connection, rel: Relation, r: Resolved, experiment: str
) -> dict[str, int]:
    """The experiment's rows whose event type maps to nothing, per value
    (``(empty)`` for NULL), most first."""
    from sqlalchemy import text

    et = as_text(r, "event_type")
    exp = experiment_text(r)
    rows = conn.execute(
        text(
            f"SELECT {et} AS v, COUNT(*) AS n FROM {rel.sql} WHERE {exp} = :experiment "
            f"AND ({et} IS NULL OR {et} NOT IN ({mapped_values(r)})) GROUP BY {et}"
        ),
        {"experiment": experiment},
    ).fetchall()
    counted = {("(empty)" if v is None else str(v)): int(n) for v, n in rows}
    return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))
