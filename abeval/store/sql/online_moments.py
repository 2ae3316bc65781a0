"""Per-arm moments of the per-user variables: the query every online
comparison reads (:func:`arm_moments_sql`), with the columns and rows shared by
the per-segment query (:mod:`abeval.store.sql.online_segments`).

Per arm it returns n, the sum of each variable (post-exposure and pre-period)
and the centred cross-product matrix ``(n − 1)·covar_samp`` of all of them,
from the engine's numerically stable ``VAR_SAMP``/``COVAR_SAMP``.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

from abeval.store.sql.online_pass import Caps, online_ctes, user_metrics_cte
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet, as_float
from abeval.store.sql.parts import With
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def moment_columns(variables: tuple[str, ...], series: str = "") -> list[str]:
    """n and, per variable (column ``series`` + name), its sum, variance and
    covariances, named after ``series``."""
    cols = [f"COUNT(*) AS {series}n"]
    cols += [f"SUM(CAST({series}{v} AS DOUBLE PRECISION)) AS {series}s_{v}" for v in variables]
    cols += [f"VAR_SAMP(CAST({series}{v} AS DOUBLE PRECISION)) AS {series}v_{v}" for v in variables]
    cols += [
        f"COVAR_SAMP(CAST({series}{a} AS DOUBLE PRECISION), "
        f"CAST({series}{b} AS DOUBLE PRECISION)) AS {series}c_{a}__{b}"
        for a, b in combinations(variables, 2)
    ]
    return cols


def moments_from_row(row: Any, variables: tuple[str, ...], series: str = "") -> Moments:
    m = row._mapping
    n = int(m[f"{series}n"])
    sums = {v: as_float(m[f"{series}s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        cross[(v, v)] = as_float(m[f"{series}v_{v}"]) * (n - 1) if n > 1 else 0.0
    for a, b in combinations(variables, 2):
        cross[(a, b)] = as_float(m[f"{series}c_{a}__{b}"]) * (n - 1) if n > 1 else 0.0
    return Moments(n=n, sums=sums, cross=cross)


def arm_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    window: Window | None = None,
    variables: VariableSet = BUILTIN,
) -> str:
    """The per-arm moments query; ``base`` replaces
    :func:`~abeval.store.sql.online_pass.online_ctes` (see
    :func:`~abeval.store.sql.online_pass.shared`)."""
    ctes = (base or online_ctes(cuped_days, window, variables)).then(
        *user_metrics_cte(caps=caps, variables=variables)
    )
    return ctes.sql(
        f"SELECT arm, {', '.join(moment_columns(variables.all_names))} "
        "FROM user_metrics GROUP BY arm ORDER BY arm"
    )


def arm_moments(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
) -> dict[str, Moments]:
    """Per arm: the moments of every per-user variable (post and pre-period), the
    post-exposure variables capped at ``caps``."""
    from sqlalchemy import text

    sql = arm_moments_sql(cuped_days, base, caps, variables=variables)
    rows = conn.execute(text(sql), {"experiment": experiment})
    return {str(r.arm): moments_from_row(r, variables.all_names) for r in rows}
