"""Per-segment moments (``--segment``): the users split by an attribute of their
first qualifying event, fixed before treatment, then the per-arm moments of
:mod:`abeval.store.sql.online_moments` per segment value.

The attribute is read as ``CAST(attributes AS JSON) ->> :segment``, the one
spelling DuckDB and PostgreSQL share (Spark's is translated).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.store.backends import backend_of
from abeval.store.sql.online_moments import (
    cross_pairs,
    groups,
    merged,
    moment_columns,
    moments_from_row,
)
from abeval.store.sql.online_pass import Caps, online_ctes, user_metrics_cte
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet
from abeval.store.sql.parts import Cte, With

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def segment_population() -> tuple[Cte, ...]:
    """Part ``population_seg``: ``population`` with the segment value of the user's
    first qualifying event (bind ``:segment``)."""
    return (
        Cte(
            "seg_first",
            "SELECT e.user_id, MIN(CAST(e.attributes AS JSON) ->> :segment) AS segment "
            "FROM exp_events e JOIN population p ON p.user_id = e.user_id "
            "AND e.ts = p.first_ts GROUP BY e.user_id",
            ("exp_events", "population"),
        ),
        Cte(
            "population_seg",
            "SELECT p.user_id, p.arm, p.first_ts, COALESCE(s.segment, '(none)') AS segment "
            "FROM population p LEFT JOIN seg_first s ON s.user_id = p.user_id",
            ("population", "seg_first"),
        ),
    )


def segment_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
) -> str:
    ctes = (base or online_ctes(cuped_days, variables=variables)).then(
        *segment_population(), *user_metrics_cte(segment=True, caps=caps, variables=variables)
    )
    columns = moment_columns(variables.all_names, "", cross_pairs(variables))
    return ctes.sql(
        f"SELECT segment, arm, {', '.join(columns)} "
        "FROM user_metrics GROUP BY segment, arm ORDER BY segment, arm"
    )


def segment_moments(
    conn: Connection,
    experiment: str,
    segment: str,
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
) -> dict[str, dict[str, Moments]]:
    """Per segment value, per arm: moments (the segment is the attribute on the
    user's first qualifying event, so it is fixed before treatment)."""
    from sqlalchemy import text

    read: dict[tuple[str, str], list[Moments]] = {}
    for part in groups(variables):
        rows = conn.execute(
            text(segment_moments_sql(cuped_days, base, caps, part)),
            {"experiment": experiment, "segment": backend_of(conn).json_key(segment)},
        )
        pairs = cross_pairs(part)
        for r in rows:
            moments = moments_from_row(r, part.all_names, "", pairs)
            read.setdefault((str(r.segment), str(r.arm)), []).append(moments)
    out: dict[str, dict[str, Moments]] = {}
    for (value, arm), parts in read.items():
        out.setdefault(value, {})[arm] = merged(parts)
    return out
