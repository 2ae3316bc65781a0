"""Runs the log replay's SQL (:mod:`abeval.store.sql.replay_parts`) on one
experiment.

:func:`open_replay` computes the shared relations once into temporary tables
(:data:`SHARED`) and hands back a :class:`ReplaySource` that runs the replay's
queries over them: counts per arm, the first repeated impression, relevance the
requests did not show, and the kernels' own statements.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from abeval.store.memory import memory_capped
from abeval.store.shared_ctes import drop, materialize
from abeval.store.sql.population import Window
from abeval.store.sql.replay_parts import (
    ARM_COUNTS_CTES,
    ARM_COUNTS_SELECT,
    FIRST_REPEAT_SQL,
    NOT_SHOWN_SQL,
    replay_ctes,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


# CTEs that several replay queries share, computed once per replay. ``r_imp`` (every
# impression row) is not among them: ``ranked`` keeps what the counts need of it
# (``copies``), and only the message about a repeated item reads it again.
# ``r_lists`` is ``ranked`` grouped by list once: the arm counts and the ranking
# kernel's lists read it instead of grouping every shown item again. ``r_items``
# holds the catalogue and the interactions in one table (one statement where each
# costs a fixed round trip, as on Spark); ``r_catalogue`` and ``r_interactions``
# read it.
SHARED = ("population", "r_rel", "ranked", "r_lists", "r_items")


PREFIX = "abeval_replay_"


@dataclass(frozen=True)
class RepeatedImpression:
    """The first (by request, then item) item shown more than once in one request."""

    list_id: str
    item_id: str
    first_position: int
    last_position: int


@dataclass(frozen=True)
class ReplaySource:
    """The replay's relations on one connection, ready to query.

    ``ctes`` are the CTE definitions of
    :func:`~abeval.store.sql.replay_parts.replay_ctes` (the shared ones read from
    temporary tables where the engine has them) and ``params`` their bind
    parameters, ``:experiment`` included."""

    conn: Connection
    ctes: str
    params: Mapping[str, Any]
    tables: Mapping[str, str] = field(default_factory=dict)

    def relation(self, name: str) -> str:
        """What a query names to read the part ``name``: its table where it was
        computed into one (a part read several times in one statement would be
        copied first by DuckDB), else the part."""
        return self.tables.get(name, name)

    def _read(self) -> dict[str, str]:
        return {name: self.relation(name) for name in ("ranked", "r_lists")}

    def rows(self, ctes: str, select: str) -> list[dict[str, Any]]:
        """Run ``select`` after the replay's CTEs and the caller's ``ctes`` (CTE
        definitions, possibly empty, that read the replay's relations)."""
        from sqlalchemy import text

        definitions = ",\n".join(c for c in (self.ctes, ctes) if c)
        sql = f"WITH {definitions}\n{select}"
        return [dict(r._mapping) for r in self.conn.execute(text(sql), dict(self.params))]

    def counts(self) -> tuple[list[dict[str, Any]], int]:
        """The arms' counts (:meth:`arm_counts`) and the relevant pairs not shown
        (:meth:`relevance_pairs_not_shown`) from one statement."""
        rows = self.rows(ARM_COUNTS_CTES.format(**self._read()), ARM_COUNTS_SELECT)
        if not rows:
            return [], self.relevance_pairs_not_shown()
        not_shown = int(rows[0]["not_shown"])
        arms = [
            {key: str(value) if key == "arm" else int(value) for key, value in row.items()}
            for row in rows
        ]
        for arm in arms:
            del arm["not_shown"]
        return arms, not_shown

    def arm_counts(self) -> list[dict[str, Any]]:
        """One row per arm of the population, by arm name: ``arm``, its analysed
        ``users``, ``users_with_requests`` (the users the ranked lists belong to: a request
        logged for several users belongs to the first, as in the metrics),
        ``requests``, ``impressions`` (repeats included), ``duplicates`` (repeated
        impressions of an item in one request) and ``tied`` (requests showing two
        items at the same position), from the per-list pass ``r_lists`` (whose
        impressions sum ``ranked``'s ``copies``: the impression rows themselves are not
        kept) and ``r_list_users``."""
        return self.counts()[0]

    def first_repeat(self) -> RepeatedImpression | None:
        """The first item shown twice in one request, or None."""
        found = self.rows("", FIRST_REPEAT_SQL)
        if not found:
            return None
        r = found[0]
        return RepeatedImpression(
            list_id=str(r["list_id"]),
            item_id=str(r["item_id"]),
            first_position=int(r["first_pos"]),
            last_position=int(r["last_pos"]),
        )

    def relevance_pairs_not_shown(self) -> int:
        """(request, item) pairs with a relevant event whose item the request did not show."""
        return int(self.rows("", NOT_SHOWN_SQL.format(**self._read()))[0]["n"])

    def ranked_rows(self) -> int:
        """The rows of ``ranked``: one per (arm, request, item) shown."""
        return int(self.rows("", "SELECT COUNT(*) AS n FROM ranked")[0]["n"])

    def experiment_has_events(self) -> bool:
        """Whether the store holds any event of the experiment."""
        from sqlalchemy import text

        n = self.conn.execute(
            text("SELECT COUNT(*) AS n FROM events WHERE experiment = :experiment"),
            {"experiment": self.params["experiment"]},
        ).scalar()
        return bool(n)


@contextmanager
def open_replay(
    conn: Connection,
    experiment: str,
    gains: Mapping[str, float],
    *,
    post_exposure_only: bool = True,
    window: Window | None = None,
    population: str | None = None,
    shown_once: bool = False,
) -> Iterator[ReplaySource]:
    """The replay's relations for ``experiment`` (its events inside ``window``): the
    shared CTEs computed once into temporary tables (dropped on leaving), the others
    left to each query, with DuckDB's memory capped meanwhile
    (:func:`abeval.store.memory.memory_capped`: 1.2 GiB, unless the lists need more).
    ``population``: a table already holding the population of that window, and
    ``shown_once`` (:func:`~abeval.store.sql.replay_parts.replay_ctes`)."""
    parts_of = partial(
        replay_ctes,
        gains,
        post_exposure_only=post_exposure_only,
        window=window,
        population=population,
        shown_once=shown_once,
    )
    ctes, params = parts_of()
    params["experiment"] = experiment
    shared = SHARED if population is None else tuple(n for n in SHARED if n != "population")
    with memory_capped(conn) as cap:
        parts, temporary = materialize(conn, ctes, shared, params, PREFIX)
        try:
            tables = {t.removeprefix(PREFIX): t for t in temporary}
            if tables:  # the queries' parts read the tables, not the parts that are them
                parts = parts_of(read=tables)[0].reading(tables)
            source = ReplaySource(conn=conn, ctes=parts.render(), params=params, tables=tables)
            if cap.lowered:
                cap.fit(source.ranked_rows())  # diversity's pairs: per row of the lists
            yield source
        finally:
            drop(conn, temporary)
