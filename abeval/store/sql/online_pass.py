"""The one pass over an experiment's events that the online queries share.

``user_day`` (computed once per report into temporary tables by :func:`shared`)
sums each analysed user's events per day and phase: after the first exposure,
in the pre-period (the ``cuped_days`` before it; never after it), or earlier.
From it, :func:`user_metrics_cte` gives per user the post-exposure variables
(impressions, clicks, purchases, revenue, converted, a team's own) and the same
over the pre-period, capped where asked. The moments per arm, segment and day,
the caps and the health counts all start from these parts and return only
sums: nothing row-level leaves the engine.

The SQL is portable (DuckDB, PostgreSQL, Spark SQL): CTEs, CASE, window sums,
``VAR_SAMP``/``COVAR_SAMP``, ``CAST(ts AS DATE)``, and ``CAST(x AS JSON) ->> key``
for segments, which is the one spelling DuckDB and PostgreSQL share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from abeval.store.sql.online_variables import BUILTIN, VariableSet
from abeval.store.sql.parts import Cte, With
from abeval.store.sql.population import Window, population_parts

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def user_day_cte(cuped_days: int, variables: VariableSet = BUILTIN) -> Cte:
    """Part ``user_day``: the one pass over an experiment's events that the online
    queries share. One row per analysed user, day and phase (1: at or after the
    user's first exposure; 0: in the ``cuped_days`` before it, the CUPED
    pre-period; -1: earlier), with the user's event counts and revenue."""
    days = int(cuped_days)
    # FILTER rather than SUM(CASE ...): the same result, much faster on DuckDB.
    sums = ", ".join(
        f"COALESCE(SUM({v.amount()}) FILTER (WHERE {v.condition()}), 0) AS {v.name}"
        if v.value
        else f"COUNT(*) FILTER (WHERE {v.condition()}) AS {v.name}"
        for v in variables.summed
    )
    phase = (
        "CASE WHEN e.ts >= p.first_ts THEN 1 "
        f"WHEN e.ts >= p.first_ts - INTERVAL '{days} days' THEN 0 ELSE -1 END"
    )
    return Cte(
        "user_day",
        f"SELECT p.user_id, CAST(e.ts AS DATE) AS day, {phase} AS phase, "
        f"{sums}, COUNT(*) AS events "
        "FROM population p JOIN exp_events e ON e.user_id = p.user_id "
        f"GROUP BY p.user_id, CAST(e.ts AS DATE), {phase}",
        ("exp_events", "population"),
    )


def online_ctes(
    cuped_days: int, window: Window | None = None, variables: VariableSet = BUILTIN
) -> With:
    """The population parts (the events inside ``window``) and ``user_day``."""
    return population_parts(window).then(user_day_cte(cuped_days, variables))


Caps = Mapping[str, float]


def capped_sql(variable: str, caps: Caps | None, expression: str | None = None) -> str:
    """``expression`` (default: the variable) capped at ``caps[variable]`` when set."""
    expression = expression or variable
    if not caps or variable not in caps:
        return expression
    return f"LEAST({expression}, CAST({float(caps[variable])!r} AS DOUBLE PRECISION))"


def user_metrics_cte(
    segment: bool = False, caps: Caps | None = None, variables: VariableSet = BUILTIN
) -> tuple[Cte, ...]:
    """Parts ending in ``user_metrics``: one row per analysed user (user_id, arm,
    first_ts, [segment], the post variables and the pre-period variables), from
    ``user_day`` and ``population`` (with ``segment``, ``population_seg`` of
    :func:`~abeval.store.sql.online_segments.segment_population`). ``caps`` caps
    post-exposure variables at the given values (docs/metrics.md#outlier-capping);
    the pre-period covariates are left as they are."""
    cols = []
    summed = [name for name, _ in variables.columns]
    for name, column in variables.columns:
        cols.append(f"SUM(CASE WHEN d.phase = 1 THEN d.{column} ELSE 0 END) AS {name}")
        cols.append(f"SUM(CASE WHEN d.phase = 0 THEN d.{column} ELSE 0 END) AS pre_{name}")
    population = "population_seg" if segment else "population"
    keys = ("user_id", "arm", "first_ts", *(("segment",) if segment else ()))
    of_p = ", ".join(f"p.{k}" for k in keys)
    parts = [
        Cte(
            "user_sums",
            f"SELECT {of_p}, {', '.join(cols)} "
            f"FROM {population} p LEFT JOIN user_day d ON d.user_id = p.user_id "
            f"GROUP BY {of_p}",
            (population, "user_day"),
        )
    ]
    if caps:
        names = [n for v in summed for n in (v, f"pre_{v}")]
        capped = ", ".join(f"{capped_sql(n, caps)} AS {n}" for n in names)
        parts.append(
            Cte(
                "user_capped",
                f"SELECT {', '.join(keys)}, {capped} FROM user_sums",
                ("user_sums",),
            )
        )
    source = parts[-1].name
    parts.append(
        Cte("user_metrics", f"SELECT *, {indicator_columns(variables)} FROM {source}", (source,))
    )
    return tuple(parts)


def indicator_columns(variables: VariableSet, pre: bool = True, series: str = "") -> str:
    """The indicator columns (1 when the summed variable is above 0), and their
    pre-period copies when ``pre``; every name after ``series`` (a daily series')."""
    prefixes = ("", "pre_") if pre else ("",)
    return ", ".join(
        f"CASE WHEN {series}{p}{of} > 0 THEN 1 ELSE 0 END AS {series}{p}{name}"
        for name, of in variables.indicators
        for p in prefixes
    )


def shared(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    window: Window | None = None,
    variables: VariableSet = BUILTIN,
) -> tuple[With, list[str]]:
    """:func:`online_ctes` computed once into temporary tables for the queries of
    one report; pass the returned parts as ``base`` and drop the tables after."""
    from abeval.store.shared_ctes import materialize

    return materialize(
        conn,
        online_ctes(cuped_days, window, variables),
        ("user_arms", "population", "user_day"),
        {"experiment": experiment},
        "abeval_online_",
    )
