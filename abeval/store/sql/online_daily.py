"""The daily series of the online metrics: per day and arm, the moments of the
per-user values at the end of the day (cumulative) or of that day's activity
alone (``own_day``), from the rows of ``user_day`` with activity only.

Also the days themselves (:func:`day_parts`: the days with an event at or after
the first exposure and not far outside the experiment, :func:`far_condition`),
which the health counts read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abeval.store.sql.online_moments import Pairs, cross_pairs
from abeval.store.sql.online_pass import Caps, capped_sql, indicator_columns, online_ctes
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet, as_float
from abeval.store.sql.parts import Cte, With

#: The columns of the two daily series when one query gives both: the
#: cumulative values', and each day's own activity's.
CUMULATIVE, OWN_DAY = "day__", "own__"

Series = tuple[tuple[str, bool], ...]

_FROM_START = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"


def daily_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    own_day: bool = False,
    variables: VariableSet = BUILTIN,
) -> str:
    """Per-user values at the end of each day, users counted from the day of their
    first exposure; capped at the report's ``caps``. Cumulative (everything up to
    the day), or with ``own_day`` that day's activity alone (zero for a user
    enrolled and idle that day), whose lift shows a novelty effect wear off. Per
    day and arm: the users (``d_n``) and the sums of :func:`daily_moments` reads."""
    series = (("", own_day),)
    ctes = (base or online_ctes(cuped_days, variables=variables)).then(
        *day_parts(cuped_days, base or online_ctes(cuped_days, variables=variables)),
        *daily_parts(cuped_days, caps, variables, series),
    )
    return ctes.sql("SELECT * FROM d_rows ORDER BY day, d_arm")


def daily_parts(
    cuped_days: int, caps: Caps | None, variables: VariableSet, series: Series
) -> tuple[Cte, ...]:
    """Parts ending in ``d_rows``: per day of the series and arm with users enrolled
    by then, the users (``d_n``) and, for each of ``series`` (column prefix, own day
    or cumulative), the raw sums of the per-user values (capped), their squares and
    their pairwise products, less what the users would have with no activity at all
    (:func:`_daily_baseline` adds it back).

    A user's value changes only on a day with activity after exposure (a row of
    ``user_day``), so these sums come from those rows alone: each adds its change
    (value after the day less value before it), summed per arm and day, then
    accumulated over the days for the cumulative series; the users are counted
    from the day of their first exposure. No row per user and idle day is made."""
    names = variables.names
    summed = [name for name, _ in variables.columns]
    of_day = ", ".join(f"d.{c} AS a_{n}" for n, c in variables.columns)
    running = ", ".join(
        f"SUM(d.{c}) OVER (PARTITION BY d.user_id ORDER BY d.day {_FROM_START}) AS c_{n}, "
        f"SUM(d.{c}) OVER (PARTITION BY d.user_id ORDER BY d.day "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS b_{n}"
        for n, c in variables.columns
    )

    def value(v: str, column: str) -> str:
        return capped_sql(v, caps, f"CAST({column} AS DOUBLE PRECISION)")

    values = []
    for prefix, own in series:
        for v in summed:
            after, before = (f"a_{v}", "0") if own else (f"c_{v}", f"COALESCE(b_{v}, 0)")
            values.append(f"{value(v, after)} AS {prefix}{v}")
            values.append(f"{value(v, before)} AS {prefix}was_{v}")
    flags = [
        indicator_columns(variables, pre=False, series=of)
        for prefix, _ in series
        for of in (prefix, f"{prefix}was_")
    ]
    changes = []
    for prefix, _ in series:
        now = {v: f"{prefix}{v}" for v in names}
        was = {v: f"{prefix}was_{v}" for v in names}
        changes += [f"SUM({now[v]} - {was[v]}) AS {prefix}s_{v}" for v in names]
        changes += [
            f"SUM({now[v]} * {now[v]} - {was[v]} * {was[v]}) AS {prefix}q_{v}" for v in names
        ]
        changes += [
            f"SUM({now[a]} * {now[b]} - {was[a]} * {was[b]}) AS {prefix}p_{a}__{b}"
            for a, b in cross_pairs(variables, pre=False)
        ]
    change_names = [c.rsplit(" AS ", 1)[1] for c in changes]
    per_day = ", ".join(f"COALESCE(x.{c}, 0) AS {c}" for c in change_names)
    cumulative = {prefix for prefix, own in series if not own}
    accumulated = ", ".join(
        f"SUM({c}) OVER (PARTITION BY arm ORDER BY day {_FROM_START}) AS {c}"
        if any(c.startswith(p) for p in cumulative)
        else c
        for c in change_names
    )
    return (
        Cte(
            "d_steps",
            f"SELECT p.arm, d.day, {of_day}, {running} FROM user_day d "
            "JOIN population p ON p.user_id = d.user_id JOIN days s ON s.day = d.day "
            "WHERE d.phase = 1",
            ("user_day", "population", "days"),
        ),
        Cte("d_values", f"SELECT arm, day, {', '.join(values)} FROM d_steps", ("d_steps",)),
        Cte(
            "d_flags",
            f"SELECT {', '.join(['*', *filter(None, flags)])} FROM d_values",
            ("d_values",),
        ),
        Cte(
            "d_changes",
            f"SELECT arm, day, {', '.join(changes)} FROM d_flags GROUP BY arm, day",
            ("d_flags",),
        ),
        Cte(
            "d_joined",
            "SELECT arm, CAST(first_ts AS DATE) AS day, COUNT(*) AS joined FROM population "
            "GROUP BY arm, CAST(first_ts AS DATE)",
            ("population",),
        ),
        Cte(
            "d_grid",
            "SELECT s.day, a.arm, COALESCE(j.joined, 0) AS joined, "
            f"{per_day} FROM days s CROSS JOIN (SELECT DISTINCT arm FROM population) a "
            "LEFT JOIN d_joined j ON j.arm = a.arm AND j.day = s.day "
            "LEFT JOIN d_changes x ON x.arm = a.arm AND x.day = s.day",
            ("days", "population", "d_joined", "d_changes"),
        ),
        Cte(
            "d_running",
            f"SELECT day, arm AS d_arm, SUM(joined) OVER (PARTITION BY arm ORDER BY day "
            f"{_FROM_START}) AS d_n, {accumulated} FROM d_grid",
            ("d_grid",),
        ),
        Cte("d_rows", "SELECT * FROM d_running WHERE d_n > 0", ("d_running",)),
    )


def _daily_baseline(caps: Caps | None, variables: VariableSet) -> dict[str, float]:
    """Each per-user value of a user with no activity (0, or a cap below 0), the
    value every change of :func:`daily_parts` starts from."""
    zero = {
        v: min(0.0, float(caps[v])) if caps and v in caps else 0.0 for v, _ in variables.columns
    }
    for name, of in variables.indicators:
        zero[name] = 1.0 if zero[of] > 0 else 0.0
    return zero


def _moments_from_sums(
    row: Any, variables: tuple[str, ...], series: str, zero: Mapping[str, float], pairs: Pairs
) -> Moments:
    """The moments of one day and arm of :func:`daily_parts` (prefix ``series``):
    every user counted at the ``zero`` value, plus the summed changes."""
    m = row._mapping
    n = int(m["d_n"])
    sums = {v: n * zero[v] + as_float(m[f"{series}s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        squares = n * zero[v] * zero[v] + as_float(m[f"{series}q_{v}"])
        cross[(v, v)] = squares - sums[v] * sums[v] / n if n > 1 else 0.0
    for a, b in pairs:
        products = n * zero[a] * zero[b] + as_float(m[f"{series}p_{a}__{b}"])
        cross[(a, b)] = products - sums[a] * sums[b] / n if n > 1 else 0.0
    return Moments(n=n, sums=sums, cross=cross)


def daily_moments(
    rows: Any, variables: VariableSet, caps: Caps | None, series: str
) -> list[tuple[str, dict[str, Moments]]]:
    """The rows of :func:`daily_moments_sql` (or of one series of
    :func:`~abeval.store.sql.online_sums.online_sums_sql`) as moments by ISO day,
    then arm."""
    zero = _daily_baseline(caps, variables)
    pairs = cross_pairs(variables, pre=False)
    out: dict[str, dict[str, Moments]] = {}
    for r in rows:
        if r.day is None:
            continue
        day = r.day.isoformat() if hasattr(r.day, "isoformat") else str(r.day)
        out.setdefault(day, {})[str(r.d_arm)] = _moments_from_sums(
            r, variables.names, series, zero, pairs
        )
    return sorted(out.items())


def events_copy(base: With, name: str) -> Cte:
    """Part ``name``: the events of ``exp_events`` again, for one reader alone. An
    engine that sees several parts read one computes it once and keeps its rows for
    them (DuckDB: 12% more CPU for the health and daily statement at 10M events);
    read once, it is a plain scan with the filters pushed into it."""
    events = base["exp_events"]
    return Cte(name, events.body, events.reads)


def day_parts(cuped_days: int, base: With) -> tuple[Cte, ...]:
    """Parts ``event_days`` (one scan of the events: per calendar day, whether far
    outside the experiment (:func:`far_condition`) and whether at or after the first
    exposure, the events) and ``days`` (the days of the daily series: those with an
    event at or after the first exposure and not far outside)."""
    flags = (
        f"CASE WHEN {far_condition(cuped_days)} THEN 1 ELSE 0 END AS far, "
        "CASE WHEN e.ts >= (SELECT MIN(first_ts) FROM population) THEN 1 ELSE 0 END AS started"
    )
    return (
        events_copy(base, "day_events"),
        Cte(
            "event_days",
            "SELECT day, far, started, COUNT(*) AS events FROM "
            f"(SELECT CAST(e.ts AS DATE) AS day, {flags} FROM day_events e) t "
            "GROUP BY day, far, started",
            ("day_events", "population"),
        ),
        Cte(
            "days",
            "SELECT DISTINCT day FROM event_days WHERE started = 1 AND far = 0",
            ("event_days",),
        ),
    )


#: Days past the last exposure (or before the first exposure's pre-period) after
#: which an event's timestamp is taken for a logging error, such as year 1 or
#: 9999: it stays in the users' totals but is left out of the daily series and
#: counted in health (docs/metrics.md#per-user-values).
FAR_DAYS = 365


def far_condition(cuped_days: int, column: str = "e.ts") -> str:
    """SQL true for an event timestamp far outside the experiment: more than
    :data:`FAR_DAYS` after the last first exposure, or more than that before the
    first exposure's CUPED pre-period. Reads ``population``."""
    before = int(cuped_days) + FAR_DAYS
    return (
        f"({column} >= (SELECT MAX(first_ts) FROM population) + INTERVAL '{FAR_DAYS} days' "
        f"OR {column} < (SELECT MIN(first_ts) FROM population) - INTERVAL '{before} days')"
    )
