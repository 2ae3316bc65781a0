"""What a report reads of the store's small tables, in one statement.

A report needs the experiment's row of ``experiments`` (arms, recorded control,
split and window, saved configuration), the ingests that brought its events (the
report's provenance) and whether any of its impressions carries a propensity
(the off-policy section runs only then). Each was its own query; on Spark every
statement costs a fixed 0.2-0.7 s whatever it reads (docs/design/spark.md §12),
so :func:`read_facts` asks for all of them at once: the experiment's row, the
ingests joined to it (one row per ingest) and the probe as a column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abeval.store.arm_lists import parse_arms
from abeval.store.experiments import ExperimentSettings
from abeval.store.sql.ope_source import PROPENSITY_PROBE
from abeval.store.sql.parts import Cte, With
from abeval.store.sql.provenance import INGEST_COLUMNS, INGESTS_SELECT, ingest_row

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.engine import Connection

_SETTINGS = ("arms", "control_arm", "split", "window_from", "window_to", "config")
#: Rewritten by every ingest that adds events to the experiment (with ``updated_at``).
_STAMP = ("first_ts", "last_ts", "updated_at")
_ROW = (*_SETTINGS, *_STAMP)

ROW_SQL = f"SELECT {', '.join(_ROW)} FROM experiments WHERE experiment = :experiment"

FACTS_SQL = With(
    (
        Cte("f_experiment", ROW_SQL),
        Cte("f_ingests", INGESTS_SELECT),
        # A count of at most one row: a scalar subquery every engine takes in a
        # SELECT list (Spark refuses EXISTS there).
        Cte("f_probe", f"SELECT COUNT(*) AS found FROM ({PROPENSITY_PROBE}) p"),
    )
).sql(
    f"SELECT {', '.join(f'x.{c}' for c in _ROW)}, "
    "(SELECT found FROM f_probe) AS has_propensities, "
    f"{', '.join(f'g.{c}' for c in (*INGEST_COLUMNS, 'events'))} "
    "FROM f_experiment x LEFT JOIN f_ingests g ON 1 = 1 ORDER BY g.ingest_id"
)


@dataclass(frozen=True)
class ExperimentRow:
    """The experiment's row of ``experiments``: its recorded settings, its saved
    configuration (the ``config`` JSON object, empty when none is saved) and its
    ``stamp``, the times of its first and last events and of the row's last change
    (ISO), which every ingest that adds events to it rewrites: what a kept summary
    of its events depends on (:func:`abeval.analysis.kept.depends`), read without
    reading the events."""

    settings: ExperimentSettings
    config: dict[str, Any]
    stamp: tuple[str | None, ...]


@dataclass(frozen=True)
class ExperimentFacts(ExperimentRow):
    """The experiment's row with whether any impression carries a propensity, and
    its ingests (as :func:`abeval.store.sql.provenance.ingests`)."""

    has_propensities: bool = False
    ingests: tuple[dict[str, Any], ...] = ()


def _row(experiment: str, values: Sequence[Any]) -> ExperimentRow:
    arms, control, split, start, end, config = values[: len(_SETTINGS)]
    settings = ExperimentSettings(
        experiment=experiment,
        arms=parse_arms(arms),
        control_arm=control,
        split=json.loads(split) if split else None,
        window_from=start,
        window_to=end,
    )
    stamp = tuple(None if v is None else str(v) for v in values[len(_SETTINGS) : len(_ROW)])
    return ExperimentRow(settings, dict(json.loads(config)) if config else {}, stamp)


def read_row(conn: Connection, experiment: str) -> ExperimentRow | None:
    """The experiment's row, one statement over ``experiments`` alone; None when
    it has no row (as :func:`read_facts`)."""
    from sqlalchemy import text

    found = conn.execute(text(ROW_SQL), {"experiment": experiment}).fetchone()
    return None if found is None else _row(experiment, found)


def read_rows(conn: Connection) -> dict[str, ExperimentRow]:
    """Every experiment's row (as :func:`read_row`), one statement."""
    from sqlalchemy import text

    found = conn.execute(text(f"SELECT experiment, {', '.join(_ROW)} FROM experiments"))
    return {str(r[0]): _row(str(r[0]), r[1:]) for r in found}


def read_facts(conn: Connection, experiment: str) -> ExperimentFacts | None:
    """The experiment's facts, one statement; None when ``experiments`` has no row
    of it (it may be read in place, or be unknown: the caller asks the slower way,
    which says which)."""
    from sqlalchemy import text

    rows = conn.execute(text(FACTS_SQL), {"experiment": experiment}).fetchall()
    if not rows:
        return None
    first = rows[0]
    row = _row(experiment, first)
    offset = len(_ROW) + 1
    return ExperimentFacts(
        settings=row.settings,
        config=row.config,
        stamp=row.stamp,
        has_propensities=bool(first[len(_ROW)]),
        ingests=tuple(ingest_row(r[offset:]) for r in rows if r[offset] is not None),
    )
