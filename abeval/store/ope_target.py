"""Where π_target of the off-policy estimates comes from
(docs/metrics.md#target-probabilities).

The target policy's probabilities reach the estimators' SQL
(:mod:`abeval.store.sql.ope_parts`) through one temporary table,
:data:`~abeval.store.sql.ope_parts.FILE_TABLE` (``arm``: the target arm,
``request_id``, ``item_id``, ``position``, ``probability``,
``probability_given_above``, the last nullable). This module fills it, from the
rows of a ``--target-propensities`` file (:func:`load_rows`) or from the rows
recorded with the experiment (:func:`load_recorded`; table
``target_propensities``, migration 0006, written by :func:`record`), and
checks that what it holds belongs to the experiment (:func:`check`): a file
must cover at least half of the source arm's requests and name no request of
another experiment.

A request is *covered* for a (source arm, target arm) when the table has a row
for at least one of its analysed impressions (the logged item at its
position); the source arm's requests are those with an impression of its
analysed users from their exposure on (:func:`abeval.store.sql.population.population_parts`,
without an analysis window, so that a recording does not depend on one).

:func:`varying_propensities` says whether an arm's logging policy was
personalised: the logged propensity of one (item, position) differs between
requests. For the *target* arm of a direction its context-free frequency of
(item, position) is then only an average over requests
(:func:`abeval.analysis.ope.varying_target`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval.errors import InputError
from abeval.store.backends import backend_of
from abeval.store.migrate import has_own_table
from abeval.store.schema import TABLES
from abeval.store.sql.ope_parts import FILE_TABLE
from abeval.store.sql.ope_source import ArmCounts
from abeval.store.sql.parts import Cte
from abeval.store.sql.population import population_parts

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


#: (target arm or None, request_id, item_id, position, probability, given above or None)
TargetRow = tuple[str | None, str, str, int, float, float | None]

#: A file must cover at least this share of the source arm's requests.
MIN_COVERAGE = 0.5
_RECORDED = "target_propensities"
_FILES = "target_files"
#: The columns of :data:`FILE_TABLE`: those of the recorded probabilities but the experiment.
_TYPED = TABLES[_RECORDED].columns[1:]
_COLUMNS = tuple(c.name for c in _TYPED)


@dataclass(frozen=True)
class Coverage:
    """How much of one source arm's requests the rows for one target arm cover."""

    source: str
    target: str
    requests: int
    covered: int

    @property
    def share(self) -> float:
        return self.covered / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class TargetCheck:
    """What :func:`check` found: the rows, those naming no request of the
    experiment (not used, not recorded), and the coverage per (source, target)."""

    rows: int
    unmatched: int
    coverage: tuple[Coverage, ...]


@dataclass(frozen=True)
class RecordedTargets:
    """The target probabilities recorded with an experiment: from which file
    (its name as given and its SHA-256), how many rows, when (naive UTC)."""

    experiment: str
    file: str
    checksum: str
    rows: int
    recorded_at: datetime


def load_rows(conn: Connection, rows: Sequence[TargetRow]) -> None:
    """Put the rows into :data:`FILE_TABLE`, the way the engine loads rows
    (:meth:`abeval.store.backends.Backend.load_rows`)."""

    backend_of(conn).drop_temporary(conn, FILE_TABLE)
    backend_of(conn).load_rows(conn, FILE_TABLE, _TYPED, rows)


def fill_arms(conn: Connection, experiment: str, arms: Sequence[str], shown: str) -> None:
    """Rows without a target arm: the other arm of a two-arm experiment (the
    first arm for a request of the second, else the second). Every named arm
    must be one of the experiment's."""
    from sqlalchemy import text

    named = [
        str(r[0])
        for r in conn.execute(
            text(f"SELECT DISTINCT arm FROM {FILE_TABLE} WHERE arm IS NOT NULL ORDER BY 1")
        )
    ]
    unknown = [a for a in named if a not in arms]
    if unknown:
        raise InputError(
            f"{shown}: arm {unknown[0]!r} is not an arm of experiment {experiment!r} (its arms "
            f"are {', '.join(arms)}); name the target arm of each row in column arm"
        )
    blank = conn.execute(text(f"SELECT COUNT(*) FROM {FILE_TABLE} WHERE arm IS NULL")).scalar()
    if not blank:
        return
    if len(arms) != 2:
        raise InputError(
            f"{shown}: no arm column and {len(arms) - 1} treatment arms; add a column arm "
            "naming the target arm of each row"
        )
    first, second = arms
    other = (
        "CASE WHEN request_id IN (SELECT request_id FROM events WHERE experiment = :experiment "
        "AND arm = :second AND request_id IS NOT NULL) THEN :first ELSE :second END"
    )
    params = {"experiment": experiment, "first": first, "second": second}
    backend_of(conn).fill_nulls(conn, FILE_TABLE, "arm", other, _COLUMNS, params)


_IMPRESSIONS = Cte(
    "t_imp",
    """
    SELECT DISTINCT p.arm, e.request_id, e.item_id, e.position
    FROM exp_events e JOIN population p ON p.user_id = e.user_id
    WHERE e.event_type = 'impression' AND e.request_id IS NOT NULL AND e.item_id IS NOT NULL
      AND e.position IS NOT NULL AND e.ts >= p.first_ts
""",
    ("exp_events", "population"),
)


def check(conn: Connection, experiment: str, shown: str) -> TargetCheck:
    """The rows of :data:`FILE_TABLE` belong to ``experiment``: none names a
    request of another experiment only, and every (source, target) they reach
    covers at least :data:`MIN_COVERAGE` of the source's requests; else one line
    giving the coverage (module docstring)."""
    from sqlalchemy import text

    params = {"experiment": experiment}
    _refuse_other_experiment(conn, experiment, shown)
    ctes = population_parts().then(
        _IMPRESSIONS,
        Cte(
            "t_req",
            "SELECT arm, COUNT(DISTINCT request_id) AS n FROM t_imp GROUP BY arm",
            ("t_imp",),
        ),
        Cte(
            "t_hit",
            "SELECT i.arm AS source, f.arm AS target, COUNT(DISTINCT i.request_id) AS covered "
            f"FROM t_imp i JOIN {FILE_TABLE} f ON f.request_id = i.request_id "
            "AND f.item_id = i.item_id AND f.position = i.position GROUP BY i.arm, f.arm",
            ("t_imp",),
        ),
    )
    found = conn.execute(
        text(
            ctes.sql(
                "SELECT h.source, h.target, r.n, h.covered FROM t_hit h "
                "JOIN t_req r ON r.arm = h.source ORDER BY h.source, h.target"
            )
        ),
        params,
    ).fetchall()
    coverage = tuple(Coverage(str(s), str(t), int(n), int(c)) for s, t, n, c in found if s != t)
    total = int(conn.execute(text(f"SELECT COUNT(*) FROM {FILE_TABLE}")).scalar() or 0)
    unmatched = int(
        conn.execute(
            text(
                f"SELECT COUNT(*) FROM {FILE_TABLE} f WHERE f.request_id NOT IN (SELECT "
                "request_id FROM events WHERE experiment = :experiment AND request_id IS NOT NULL)"
            ),
            params,
        ).scalar()
        or 0
    )
    if not coverage:
        raise InputError(
            f"{shown}: covers no request of experiment {experiment!r} (0 of its requests "
            "show an item at a position the file gives); give this experiment's target "
            "probabilities"
        )
    for c in coverage:
        if c.share < MIN_COVERAGE:
            raise InputError(
                f"{shown}: covers {c.covered:,} of {c.requests:,} requests of arm {c.source} "
                f"({c.share:.1%}) for target {c.target}; a target file must give the logged "
                f"item's probability for at least {MIN_COVERAGE:.0%} of the source arm's "
                f"requests: check that it is the file of experiment {experiment!r}"
            )
    return TargetCheck(total, unmatched, coverage)


def _refuse_other_experiment(conn: Connection, experiment: str, shown: str) -> None:
    """The file is another experiment's: its rows match the impressions (same
    request, item and position) of more requests of another experiment than of
    ``experiment``, or name requests that are not ``experiment``'s but another's
    impressions. Request ids may repeat across experiments (simulated ones do)."""
    from sqlalchemy import text

    params = {"experiment": experiment}
    matched = conn.execute(
        text(
            "SELECT e.experiment, COUNT(DISTINCT f.request_id) FROM "
            "(SELECT DISTINCT experiment, request_id, item_id, position FROM events "
            "WHERE event_type = 'impression' AND request_id IS NOT NULL) e "
            f"JOIN {FILE_TABLE} f ON f.request_id = e.request_id AND f.item_id = e.item_id "
            "AND f.position = e.position GROUP BY e.experiment"
        ),
        params,
    ).fetchall()
    counts = {str(x): int(n) for x, n in matched}
    own = counts.pop(experiment, 0)
    if counts:
        other, most = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if most > own:
            raise InputError(
                f"{shown}: gives the logged item of {most:,} requests of experiment {other!r} "
                f"and of {own:,} of {experiment!r}; give experiment {experiment!r}'s target "
                "probabilities"
            )
    row = conn.execute(
        text(
            "SELECT MIN(e.experiment), COUNT(DISTINCT f.request_id), COUNT(DISTINCT e.experiment) "
            f"FROM {FILE_TABLE} f JOIN events e ON e.request_id = f.request_id "
            "AND e.item_id = f.item_id AND e.position = f.position "
            "AND e.event_type = 'impression' AND e.experiment <> :experiment "
            "WHERE f.request_id NOT IN (SELECT request_id FROM events WHERE experiment = "
            ":experiment AND request_id IS NOT NULL)"
        ),
        params,
    ).fetchone()
    if row is None or not row[1]:
        return
    other = f"experiment {row[0]!r}" if row[2] == 1 else f"{row[2]} other experiments"
    raise InputError(
        f"{shown}: names {row[1]:,} requests of {other}, not of {experiment!r}; give "
        f"experiment {experiment!r}'s target probabilities"
    )


def record(
    conn: Connection, experiment: str, shown: str, checksum: str, rows: int
) -> RecordedTargets:
    """Make the rows of :data:`FILE_TABLE` whose request is the experiment's its
    recorded target probabilities, replacing any recorded before (the caller's
    transaction makes it all or nothing; :func:`check` first)."""
    params: dict[str, Any] = {"experiment": experiment}
    at = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    done = RecordedTargets(experiment, shown, checksum, rows, at)
    fresh = (
        f"SELECT :experiment AS experiment, {', '.join('f.' + c for c in _COLUMNS)} "
        f"FROM {FILE_TABLE} f WHERE f.request_id IN (SELECT request_id FROM events "
        "WHERE experiment = :experiment AND request_id IS NOT NULL)"
    )
    # The probabilities first, then the file's row, which is what :func:`recorded`
    # looks for (on Spark, each table is swapped in by one pointer of its own).
    backend = backend_of(conn)
    columns = ("experiment", *_COLUMNS)
    backend.replace_by_query(conn, _RECORDED, "experiment", columns, fresh, params)
    row = {
        "experiment": experiment,
        "file": shown,
        "checksum": checksum,
        "rows_recorded": rows,
        "recorded_at": at,
    }
    backend.replace_rows(conn, _FILES, "experiment", [experiment], [row])
    return done


def record_rows(
    conn: Connection,
    experiment: str,
    arms: Sequence[str],
    rows: Sequence[TargetRow],
    shown: str,
    checksum: str,
) -> tuple[TargetCheck, RecordedTargets]:
    """Load, check and record a file's rows on the caller's transaction."""

    load_rows(conn, rows)
    try:
        fill_arms(conn, experiment, arms, shown)
        found = check(conn, experiment, shown)
        done = record(conn, experiment, shown, checksum, found.rows - found.unmatched)
    finally:
        backend_of(conn).drop_temporary(conn, FILE_TABLE)
    return found, done


def recorded(conn: Connection, experiment: str) -> RecordedTargets | None:
    """The target probabilities recorded with ``experiment``, if any (a Spark store
    without the table has none)."""
    if not has_own_table(conn, _FILES):
        return None
    return _recorded(conn, "WHERE experiment = :experiment", experiment).get(experiment)


def recorded_all(conn: Connection) -> dict[str, RecordedTargets]:
    """The target probabilities recorded with every experiment (as :func:`recorded`),
    one statement."""
    return _recorded(conn, "", None) if has_own_table(conn, _FILES) else {}


def _recorded(conn: Connection, where: str, experiment: str | None) -> dict[str, RecordedTargets]:
    from sqlalchemy import text

    rows = conn.execute(
        text(
            f"SELECT experiment, file, checksum, rows_recorded, recorded_at FROM {_FILES} {where}"
        ),
        {"experiment": experiment} if experiment is not None else {},
    )
    return {str(r[0]): RecordedTargets(str(r[0]), str(r[1]), str(r[2]), int(r[3]), r[4])
            for r in rows}  # fmt: skip


def load_recorded(conn: Connection, experiment: str) -> RecordedTargets | None:
    """:data:`FILE_TABLE` from the probabilities recorded with ``experiment``;
    None (and no table) when none are."""
    from sqlalchemy import text

    found = recorded(conn, experiment)
    if found is None:
        return None
    backend_of(conn).drop_temporary(conn, FILE_TABLE)
    conn.execute(
        text(
            f"CREATE TEMP TABLE {FILE_TABLE} AS SELECT {', '.join(_COLUMNS)} FROM {_RECORDED} "
            "WHERE experiment = :experiment"
        ),
        {"experiment": experiment},
    )
    return found


@dataclass(frozen=True)
class VaryingPropensities:
    """Of the (item, position) pairs an arm logged with a propensity, how many were
    logged with different propensities on different requests."""

    arm: str
    pairs: int
    varying: int


def varying_propensities(counts: ArmCounts) -> VaryingPropensities:
    """Whether the arm's logging policy gave one (item, position) different
    propensities on different requests (module docstring), from its counts
    (:meth:`abeval.store.sql.ope_source.OpeSource.arm_counts` asks in the same statement)."""
    return VaryingPropensities(counts.arm, counts.logged_pairs, counts.varying_pairs)
