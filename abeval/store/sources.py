"""Sources: tables read in place (docs/usage.md#tables-read-in-place).

A source names a table of the store's database (or, on DuckDB, Parquet/CSV
files) and the mapping of its columns and event-type values to the event format
(:mod:`abeval.store.source_mapping`). It is a row of the ``sources`` table
(``migrations/0004_sources.sql``); its events are never copied. ``abeval report``
on one of its experiments runs inside :func:`read_in_place`, which presents the
table as ``events`` and ``experiments`` for that one connection
(:mod:`abeval.store.source_sql`), so the analysis SQL is the same for both.

An experiment that is in the store (ingested) is read from the store; else from
the first source, by name, that holds it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval.errors import AbevalError, InputError, NotFoundError, close_matches
from abeval.store.backends import backend_of
from abeval.store.experiments import ExperimentSummary, summaries, unknown_experiment_message
from abeval.store.migrate import has_own_table
from abeval.store.source_mapping import Mapping, Resolved, check_name
from abeval.store.source_sql import (
    Relation,
    checked,
    contract_views,
    counts_sql,
    experiment_text,
    unmapped_counts,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.database import Database


@dataclass(frozen=True)
class Source:
    name: str
    table: str
    mapping: Mapping
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SourceCheck:
    """What ``source add`` found in the table: events per experiment (of the mapped
    event types), rows per event-type value that maps to nothing, and the
    experiments the store already holds (those are read from the store)."""

    source: Source
    events: dict[str, int]
    unmapped: dict[str, int]
    in_store: tuple[str, ...]


@dataclass(frozen=True)
class InPlace:
    """The source an experiment is read from, for the report: its rows whose event
    type maps to nothing, per value."""

    source: Source
    unmapped: dict[str, int]


def _load(conn: Connection) -> list[Source]:
    from sqlalchemy import text

    if not has_own_table(conn, "sources"):
        return []
    rows = conn.execute(
        text("SELECT name, table_ref, mapping, created_at, updated_at FROM sources ORDER BY name")
    ).fetchall()
    return [Source(str(r[0]), str(r[1]), Mapping.from_json(r[2]), r[3], r[4]) for r in rows]


def list_sources(store: Database) -> list[Source]:
    with store.connect() as conn:
        return _load(conn)


def _unknown(name: str, known: list[str]) -> NotFoundError:
    close = close_matches(name, known)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return NotFoundError(f"no source {name!r}{hint} (list them with `abeval source list`)")


def remove_source(store: Database, name: str) -> Source:
    """Forget a source; its table is not touched."""
    with store.writing() as conn:
        sources = {s.name: s for s in _load(conn)}
        if name not in sources:
            raise _unknown(name, sorted(sources))
        _save(conn, name, None)
    return sources[name]


def _save(conn: Connection, name: str, new: Source | None) -> None:
    """The source ``name`` replaced by ``new`` (None: removed). A Parquet table on
    Spark takes no DELETE: its few rows are written again."""
    rows = [_row(new)] if new is not None else []
    backend_of(conn).replace_rows(conn, "sources", "name", [name], rows)


def _row(s: Source) -> dict[str, object]:
    return {
        "name": s.name,
        "table_ref": s.table,
        "mapping": s.mapping.to_json(),
        "created_at": s.created_at,
        "updated_at": s.updated_at,
    }


def add_source(
    store: Database, name: str, table: str, mapping: Mapping, *, replace_existing: bool = False
) -> SourceCheck:
    """Check ``mapping`` against ``table`` and record the source; nothing is
    recorded when a check fails. One pass over the table counts its events."""
    check_name(name)
    with store.writing() as conn:
        existing = {s.name: s for s in _load(conn)}
        if name in existing and not replace_existing:
            raise InputError(
                f"a source named {name!r} exists (table {existing[name].table}); "
                "pass {replace_existing} to replace its mapping, or choose another name",
                parameters=("replace_existing",),
            )
        rel, resolved = _checked(conn, name, table, mapping)
        events, unmapped = _count(conn, rel, resolved)
        if not events:
            raise InputError(
                f"source {name!r}: {rel.shown} has no event of a mapped type; "
                f"map its event types with {{event_types}}{_seen(unmapped)}",
                parameters=("event_types",),
            )
        now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        created = existing[name].created_at if name in existing else now
        source = Source(name, rel.shown, mapping, created, now)
        _save(conn, name, source)
        in_store = _in_store(conn, sorted(events))
    return SourceCheck(source, events, unmapped, in_store)


def _seen(unmapped: dict[str, int]) -> str:
    if not unmapped:
        return ""
    values = ", ".join(list(unmapped)[:8])
    return f" (its values: {values})"


def _checked(
    conn: Connection, name: str, table: str, mapping: Mapping
) -> tuple[Relation, Resolved]:
    try:
        return checked(conn, table, mapping)
    except AbevalError as exc:
        raise exc.prefixed(f"source {name!r}: ") from None


def _count(conn: Connection, rel: Relation, r: Resolved) -> tuple[dict[str, int], dict[str, int]]:
    """Events of a mapped type per experiment; rows of other types per value."""
    from sqlalchemy import text

    events: dict[str, int] = {}
    unmapped: dict[str, int] = {}
    for exp, value, mapped, n in conn.execute(text(counts_sql(rel, r, None))):
        if mapped:
            key = "(empty)" if exp is None else str(exp)
            events[key] = events.get(key, 0) + int(n)
        else:
            key = "(empty)" if value is None else str(value)
            unmapped[key] = unmapped.get(key, 0) + int(n)
    return dict(sorted(events.items())), dict(sorted(unmapped.items(), key=lambda kv: -kv[1]))


def _in_store(conn: Connection, experiments: list[str]) -> tuple[str, ...]:
    from sqlalchemy import text

    stored = {str(r[0]) for r in conn.execute(text("SELECT experiment FROM experiments"))}
    return tuple(e for e in experiments if e in stored)


def _holds(conn: Connection, rel: Relation, r: Resolved, experiment: str) -> bool:
    from sqlalchemy import text

    if r.experiment is not None:
        return r.experiment == experiment
    sql = f"SELECT 1 FROM {rel.sql} WHERE {experiment_text(r)} = :e LIMIT 1"
    return conn.execute(text(sql), {"e": experiment}).first() is not None


def _refit(source: Source, exc: AbevalError) -> AbevalError:
    """A source whose table no longer fits its mapping, said at report time."""
    return exc.prefixed(
        f"source {source.name!r} no longer fits its table: ",
        "; fix the table, or record the mapping again with "
        f"`abeval source add {shlex.quote(source.name)} --replace ...`",
    )


@contextmanager
def read_in_place(conn: Connection, experiment: str) -> Iterator[InPlace | None]:
    """For the block, ``events`` and ``experiments`` on ``conn`` are the source's
    table seen through its mapping, when ``experiment`` is read in place; None
    (nothing changed) when the store holds the experiment or no source does.
    The table is checked against the mapping again: it may have changed."""
    from sqlalchemy import text

    stored = conn.execute(
        text("SELECT 1 FROM experiments WHERE experiment = :e"), {"e": experiment}
    ).first()
    sources = [] if stored else _load(conn)
    found = None
    failed: list[AbevalError] = []
    for source in sources:
        try:
            rel, resolved = checked(conn, source.table, source.mapping)
            if _holds(conn, rel, resolved, experiment):
                found = (source, rel, resolved)
                break
        except AbevalError as exc:
            failed.append(_refit(source, exc))
    if found is None:
        if failed:
            raise failed[0]
        if sources:
            raise NotFoundError(unknown_experiment_message(experiment, _all_known(conn, sources)))
        yield None
        return
    source, rel, resolved = found
    place = InPlace(source, unmapped_counts(conn, rel, resolved, experiment))
    with contract_views(conn, rel, resolved, experiment):
        yield place


def _all_known(conn: Connection, sources: list[Source]) -> list[str]:
    """The experiments of the store and of every source (for a did-you-mean)."""
    from sqlalchemy import text

    known = {str(r[0]) for r in conn.execute(text("SELECT experiment FROM experiments"))}
    for source in sources:
        rel, r = checked(conn, source.table, source.mapping)
        sql = f"SELECT DISTINCT {experiment_text(r)} FROM {rel.sql}"
        known |= {str(row[0]) for row in conn.execute(text(sql)) if row[0] is not None}
    return sorted(known)


def source_experiments(store: Database) -> tuple[list[ExperimentSummary], list[str]]:
    """The experiments of every source, as ``abeval experiments`` lists them, and a
    line for each source that cannot be read or experiment the store hides."""
    found: list[ExperimentSummary] = []
    problems: list[str] = []
    with store.connect() as conn:
        for source in _load(conn):
            try:
                rel, resolved = checked(conn, source.table, source.mapping)
                with contract_views(conn, rel, resolved, None):
                    listed = summaries(conn)
            except AbevalError as exc:
                problems.append(_refit(source, exc).message)
                continue
            hidden = set(_in_store(conn, [e.experiment for e in listed]))
            problems += [
                f"experiment {e} of source {source.name!r} is also in the store; "
                "the store's copy is the one analysed"
                for e in sorted(hidden)
            ]
            found += [replace(e, source=source.name) for e in listed if e.experiment not in hidden]
    return found, problems


def refuse_settings(store: Database, experiment: str) -> None:
    """``experiment set`` found no ``experiment`` in the store: say so when a source
    holds it (its settings are not recorded), or name the experiments of the
    store and the sources."""
    with store.connect() as conn, read_in_place(conn, experiment) as place:
        if place is not None:
            raise AbevalError(
                f"experiment {experiment!r} is read in place from source "
                f"{place.source.name!r}, and its settings are not recorded; pass {{control}}, "
                "{window_from} and {window_to} to `abeval report` instead",
                parameters=("control", "window_from", "window_to"),
            )
