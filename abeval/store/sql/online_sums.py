"""The report's online sums in two statements: the per-arm moments, then the
health counts and both daily series in one query over the kept per-user parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abeval.store.sql.online_daily import (
    CUMULATIVE,
    OWN_DAY,
    daily_moments,
    daily_parts,
    day_parts,
)
from abeval.store.sql.online_health import (
    HEALTH_SELECT,
    health_counts,
    health_parts,
    outside_window,
)
from abeval.store.sql.online_moments import arm_moments, groups, merged
from abeval.store.sql.online_pass import Caps
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet
from abeval.store.sql.parts import Cte, With
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def online_sums_sql(
    cuped_days: int,
    base: With,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
    daily: bool = True,
) -> str:
    """:data:`~abeval.store.sql.online_health.HEALTH_SELECT` and, with ``daily``,
    both daily series of :func:`~abeval.store.sql.online_daily.daily_moments_sql`
    as one query over the kept per-user parts: per day and arm, the health counts
    and that day's moments of each series (columns after
    :data:`~abeval.store.sql.online_daily.CUMULATIVE` and
    :data:`~abeval.store.sql.online_daily.OWN_DAY`); one row of health counts
    alone when there is no day. (The per-arm moments stay a query of their own: in this
    one DuckDB's parallel sums of them differ from run to run in the last bits.)"""
    counts = Cte(
        "h_row",
        HEALTH_SELECT,
        ("user_arms", "population", "pair_counts", "totals", "analysed", "event_days"),
    )
    ctes = base.then(*health_parts(cuped_days, base), counts)
    if not daily:
        return ctes.sql("SELECT h.* FROM h_row h")
    ctes = ctes.then(*daily_parts(cuped_days, caps, variables, _BOTH))
    return ctes.sql(
        "SELECT h.*, d.* FROM h_row h LEFT JOIN d_rows d ON 1 = 1 ORDER BY d.day, d.d_arm"
    )


Daily = list[tuple[str, dict[str, Moments]]]

#: Both daily series in one statement: the cumulative one and each day's own.
_BOTH = ((CUMULATIVE, False), (OWN_DAY, True))


@dataclass(frozen=True)
class OnlineSums:
    """What :func:`online_sums` returns: per-arm moments, the health counts (as
    :func:`~abeval.store.sql.online_health.health`) and the two daily series (by
    ISO day, then arm; empty when not asked for)."""

    moments: dict[str, Moments]
    health: dict[str, Any]
    daily: Daily
    own_days: Daily


def online_sums(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    base: With,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
    window: Window | None = None,
    daily: bool = True,
) -> OnlineSums:
    """:func:`~abeval.store.sql.online_moments.arm_moments`, then
    :func:`~abeval.store.sql.online_health.health` and the daily series from one
    statement (with a window, the events outside it are a third)."""
    from sqlalchemy import text

    moments = arm_moments(conn, experiment, cuped_days, base, caps, variables)
    first, *more = groups(variables) if daily else [variables]
    sql = online_sums_sql(cuped_days, base, caps, first, daily)
    rows = conn.execute(text(sql), {"experiment": experiment}).fetchall()
    cumulative = daily_moments(rows, first, caps, CUMULATIVE) if daily else []
    own = daily_moments(rows, first, caps, OWN_DAY) if daily else []
    health = health_counts(rows[0]._mapping, outside_window(conn, experiment, window))
    for part in more:  # a team's many metrics: their daily series in statements of their own
        ctes = base.then(*day_parts(cuped_days, base), *daily_parts(cuped_days, caps, part, _BOTH))
        sql = ctes.sql("SELECT * FROM d_rows ORDER BY day, d_arm")
        rows = conn.execute(text(sql), {"experiment": experiment}).fetchall()
        cumulative = _joined(cumulative, daily_moments(rows, part, caps, CUMULATIVE))
        own = _joined(own, daily_moments(rows, part, caps, OWN_DAY))
    return OnlineSums(moments, health, cumulative, own)


def _joined(daily: Daily, more: Daily) -> Daily:
    """A daily series with the moments of more variables, day by day and arm by arm
    (both have the same days and arms: those with users)."""
    extra = dict(more)
    return [(day, {a: merged([m, extra[day][a]]) for a, m in arms.items()}) for day, arms in daily]
