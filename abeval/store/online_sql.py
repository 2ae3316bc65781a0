"""Per-arm sufficient statistics of the online metrics, computed inside the engine.

One pass over the experiment's events (``user_day``, computed once per report
by :func:`shared`) sums each analysed user's events per day and phase: after
the first exposure, in the pre-period (the ``cuped_days`` before it; never
after it), or earlier. From it, one query per breakdown gives per user the
post-exposure counts (impressions, clicks, purchases, revenue, converted) and
the same counts over the pre-period; the daily series and the health counts
read it too. Per arm (and segment or day) it returns only n, the sum of each
variable, and the centred cross-product matrix ``(n − 1)·covar_samp`` of all
variables, using the engine's numerically stable variance aggregates. Nothing
row-level leaves the engine.

The SQL is portable (DuckDB, PostgreSQL, Spark SQL): CTEs, CASE, window sums,
``VAR_SAMP``/``COVAR_SAMP``, ``CAST(ts AS DATE)``, and ``CAST(x AS JSON) ->> key``
for segments, which is the one spelling DuckDB and PostgreSQL share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from itertools import combinations
from typing import TYPE_CHECKING, Any

from abeval.store.population import Window, population_parts
from abeval.store.quoting import quote_literal
from abeval.store.sql_parts import Cte, With

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class Variable:
    """A per-user variable summed over the user's events: those of ``event_type``
    whose attributes equal ``where`` (attribute name → text), each adding 1 (a
    count) or its ``value`` (``value=True``: missing values add 0)."""

    name: str
    event_type: str
    value: bool = False
    where: tuple[tuple[str, str], ...] = ()

    def amount(self) -> str:
        return "COALESCE(e.value, 0)" if self.value else "1"

    def condition(self) -> str:
        parts = [f"e.event_type = {quote_literal(self.event_type)}"]
        parts += [
            f"CAST(e.attributes AS JSON) ->> {quote_literal(k)} = {quote_literal(v)}"
            for k, v in self.where
        ]
        return " AND ".join(parts)


@dataclass(frozen=True)
class VariableSet:
    """The per-user variables a report sums: summed ones (:class:`Variable`),
    copies (name, summed variable: the same per-user values under a name of their
    own, which a cap on one metric caps alone, docs/metrics.md#outlier-capping) and
    indicators (name, summed variable: 1 when it is above 0). The built-in metrics
    read :data:`BUILTIN`; a team's recorded metrics add theirs
    (docs/metrics.md#team-defined-metrics)."""

    summed: tuple[Variable, ...]
    indicators: tuple[tuple[str, str], ...]
    copies: tuple[tuple[str, str], ...] = ()

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """(name, column of ``user_day`` it sums): the summed variables and the copies."""
        return (*((v.name, v.name) for v in self.summed), *self.copies)

    @property
    def names(self) -> tuple[str, ...]:
        return (*(n for n, _ in self.columns), *(n for n, _ in self.indicators))

    @property
    def all_names(self) -> tuple[str, ...]:
        return (*self.names, *(f"pre_{v}" for v in self.names))

    def plus(self, other: VariableSet) -> VariableSet:
        return VariableSet(
            self.summed + other.summed,
            self.indicators + other.indicators,
            self.copies + other.copies,
        )

    def keyed_for(self, dialect: str) -> VariableSet:
        """These variables with their attribute names written as ``dialect``'s
        ``->>`` reads them as names (:func:`json_key`)."""
        summed = tuple(
            replace(v, where=tuple((json_key(k, dialect), x) for k, x in v.where))
            for v in self.summed
        )
        return replace(self, summed=summed)


def json_key(name: str, dialect: str) -> str:
    """The text that ``CAST(x AS JSON) ->> text`` reads as the attribute ``name``,
    exactly. PostgreSQL (and Spark's rewrite) take any text as a name; DuckDB reads
    a text beginning with ``$`` as a JSONPath and one beginning with ``/`` as a JSON
    Pointer (RFC 6901), so those names go to DuckDB as the pointer to themselves
    (``~`` written ``~0``, ``/`` written ``~1``)."""
    if dialect == "duckdb" and name[:1] in ("$", "/"):
        return "/" + name.replace("~", "~0").replace("/", "~1")
    return name


BUILTIN = VariableSet(
    summed=(
        Variable("impressions", "impression"),
        Variable("clicks", "click"),
        Variable("purchases", "purchase"),
        Variable("revenue", "purchase", value=True),
    ),
    indicators=(("converted", "purchases"),),
)
POST_VARIABLES = tuple(v.name for v in BUILTIN.summed)
VARIABLES = BUILTIN.names
PRE_VARIABLES = tuple(f"pre_{v}" for v in VARIABLES)
ALL_VARIABLES = BUILTIN.all_names


@dataclass(frozen=True)
class Moments:
    """n users, Σ of each variable, and centred cross-products Σ(a − ā)(b − b̄)."""

    n: int
    sums: dict[str, float]
    cross: dict[tuple[str, str], float]

    def ss(self, a: str) -> float:
        return self.cross.get((a, a), 0.0)

    def cp(self, a: str, b: str) -> float:
        if (a, b) in self.cross:
            return self.cross[(a, b)]
        return self.cross.get((b, a), 0.0)


def _num(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, Decimal):
        return float(value)
    return float(value)


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


def _capped(variable: str, caps: Caps | None, expression: str | None = None) -> str:
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
    :func:`_segment_population`). ``caps`` caps post-exposure variables at the given
    values (docs/metrics.md#outlier-capping); the pre-period covariates are left as
    they are."""
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
        capped = ", ".join(f"{_capped(n, caps)} AS {n}" for n in names)
        parts.append(
            Cte(
                "user_capped",
                f"SELECT {', '.join(keys)}, {capped} FROM user_sums",
                ("user_sums",),
            )
        )
    source = parts[-1].name
    parts.append(
        Cte("user_metrics", f"SELECT *, {_indicators(variables)} FROM {source}", (source,))
    )
    return tuple(parts)


def _indicators(variables: VariableSet, pre: bool = True, series: str = "") -> str:
    """The indicator columns (1 when the summed variable is above 0), and their
    pre-period copies when ``pre``; every name after ``series`` (a daily series')."""
    prefixes = ("", "pre_") if pre else ("",)
    return ", ".join(
        f"CASE WHEN {series}{p}{of} > 0 THEN 1 ELSE 0 END AS {series}{p}{name}"
        for name, of in variables.indicators
        for p in prefixes
    )


def _segment_population() -> tuple[Cte, ...]:
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


def _moment_columns(variables: tuple[str, ...], series: str = "") -> list[str]:
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


def _moments_from_row(row: Any, variables: tuple[str, ...], series: str = "") -> Moments:
    m = row._mapping
    n = int(m[f"{series}n"])
    sums = {v: _num(m[f"{series}s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        cross[(v, v)] = _num(m[f"{series}v_{v}"]) * (n - 1) if n > 1 else 0.0
    for a, b in combinations(variables, 2):
        cross[(a, b)] = _num(m[f"{series}c_{a}__{b}"]) * (n - 1) if n > 1 else 0.0
    return Moments(n=n, sums=sums, cross=cross)


def arm_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    window: Window | None = None,
    variables: VariableSet = BUILTIN,
) -> str:
    """The per-arm moments query; ``base`` replaces :func:`online_ctes` (see
    :func:`shared`)."""
    ctes = (base or online_ctes(cuped_days, window, variables)).then(
        *user_metrics_cte(caps=caps, variables=variables)
    )
    return ctes.sql(
        f"SELECT arm, {', '.join(_moment_columns(variables.all_names))} "
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
    return {str(r.arm): _moments_from_row(r, variables.all_names) for r in rows}


def segment_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
) -> str:
    ctes = (base or online_ctes(cuped_days, variables=variables)).then(
        *_segment_population(), *user_metrics_cte(segment=True, caps=caps, variables=variables)
    )
    return ctes.sql(
        f"SELECT segment, arm, {', '.join(_moment_columns(variables.all_names))} "
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

    out: dict[str, dict[str, Moments]] = {}
    rows = conn.execute(
        text(segment_moments_sql(cuped_days, base, caps, variables)),
        {"experiment": experiment, "segment": json_key(segment, conn.dialect.name)},
    )
    for r in rows:
        out.setdefault(str(r.segment), {})[str(r.arm)] = _moments_from_row(r, variables.all_names)
    return out


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
        *_daily_parts(cuped_days, caps, variables, series),
    )
    return ctes.sql("SELECT * FROM d_rows ORDER BY day, d_arm")


def _daily_parts(
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
        return _capped(v, caps, f"CAST({column} AS DOUBLE PRECISION)")

    values = []
    for prefix, own in series:
        for v in summed:
            after, before = (f"a_{v}", "0") if own else (f"c_{v}", f"COALESCE(b_{v}, 0)")
            values.append(f"{value(v, after)} AS {prefix}{v}")
            values.append(f"{value(v, before)} AS {prefix}was_{v}")
    flags = [
        _indicators(variables, pre=False, series=of)
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
            for a, b in combinations(names, 2)
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
    value every change of :func:`_daily_parts` starts from."""
    zero = {
        v: min(0.0, float(caps[v])) if caps and v in caps else 0.0 for v, _ in variables.columns
    }
    for name, of in variables.indicators:
        zero[name] = 1.0 if zero[of] > 0 else 0.0
    return zero


def _moments_from_sums(
    row: Any, variables: tuple[str, ...], series: str, zero: Mapping[str, float]
) -> Moments:
    """The moments of one day and arm of :func:`_daily_parts` (prefix ``series``):
    every user counted at the ``zero`` value, plus the summed changes."""
    m = row._mapping
    n = int(m["d_n"])
    sums = {v: n * zero[v] + _num(m[f"{series}s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        squares = n * zero[v] * zero[v] + _num(m[f"{series}q_{v}"])
        cross[(v, v)] = squares - sums[v] * sums[v] / n if n > 1 else 0.0
    for a, b in combinations(variables, 2):
        products = n * zero[a] * zero[b] + _num(m[f"{series}p_{a}__{b}"])
        cross[(a, b)] = products - sums[a] * sums[b] / n if n > 1 else 0.0
    return Moments(n=n, sums=sums, cross=cross)


def daily_moments(
    rows: Any, variables: VariableSet, caps: Caps | None, series: str
) -> list[tuple[str, dict[str, Moments]]]:
    """The rows of :func:`daily_moments_sql` (or of :func:`online_sums_sql`, one of
    its series) as moments by ISO day, then arm."""
    zero = _daily_baseline(caps, variables)
    out: dict[str, dict[str, Moments]] = {}
    for r in rows:
        if r.day is None:
            continue
        day = r.day.isoformat() if hasattr(r.day, "isoformat") else str(r.day)
        out.setdefault(day, {})[str(r.d_arm)] = _moments_from_sums(r, variables.names, series, zero)
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


def health_parts(cuped_days: int, base: With) -> tuple[Cte, ...]:
    """The parts of the health counts that follow :func:`online_ctes` (``base``),
    with :func:`day_parts`."""
    return (
        events_copy(base, "pair_events"),
        Cte(
            "pairs",
            """
    SELECT
        COUNT(*) FILTER (WHERE event_type = 'impression') AS impressions,
        COUNT(*) FILTER (WHERE event_type = 'click') AS clicks,
        COUNT(*) FILTER (WHERE event_type = 'purchase') AS purchases
    FROM pair_events
    WHERE event_type IN ('impression', 'click', 'purchase')
      AND request_no IS NOT NULL AND item_no IS NOT NULL
    GROUP BY request_no, item_no
""",
            ("pair_events",),
        ),
        *_HEALTH_SUMS,
        *day_parts(cuped_days, base),
    )


_HEALTH_SUMS = (
    Cte(
        "pair_counts",
        """
    SELECT
        SUM(CASE WHEN impressions > 1 THEN impressions - 1 ELSE 0 END) AS duplicates,
        SUM(CASE WHEN impressions = 0 THEN clicks ELSE 0 END) AS clicks_alone,
        SUM(CASE WHEN clicks = 0 THEN purchases ELSE 0 END) AS purchases_alone
    FROM pairs
""",
        ("pairs",),
    ),
    # From user_arms, so that the events are read once here (an engine may
    # store a CTE that is read twice).
    Cte(
        "totals",
        """
    SELECT COALESCE(SUM(events), 0) AS events, MIN(first_event) AS first_ts,
        MAX(last_event) AS last_ts
    FROM user_arms
""",
        ("user_arms",),
    ),
    Cte(
        "analysed",
        """
    SELECT COALESCE(SUM(events), 0) AS events,
        COALESCE(SUM(CASE WHEN phase < 1 THEN events ELSE 0 END), 0) AS before_exposure
    FROM user_day
""",
        ("user_day",),
    ),
)


#: The health counts' ``SELECT``, after :func:`online_ctes` and :func:`health_parts`.
HEALTH_SELECT = """SELECT
    (SELECT COUNT(*) FROM user_arms WHERE several_arms = 1) AS users_in_several_arms,
    (SELECT COUNT(*) FROM user_arms) AS users_seen,
    (SELECT COUNT(*) FROM population) AS users_analysed,
    (SELECT COALESCE(clicks_alone, 0) FROM pair_counts) AS clicks_without_impression,
    (SELECT COALESCE(purchases_alone, 0) FROM pair_counts) AS purchases_without_click,
    (SELECT COALESCE(duplicates, 0) FROM pair_counts) AS duplicate_impressions,
    (SELECT events FROM totals) - (SELECT events FROM analysed) AS events_outside_population,
    (SELECT before_exposure FROM analysed) AS events_before_exposure,
    (SELECT events FROM totals) AS events,
    (SELECT first_ts FROM totals) AS first_ts,
    (SELECT last_ts FROM totals) AS last_ts,
    (SELECT COALESCE(SUM(events), 0) FROM event_days WHERE far = 1) AS events_far_outside
"""


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


def health(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    base: With | None = None,
    window: Window | None = None,
) -> dict[str, Any]:
    """Population and data-quality counts for one experiment. One grouping of the
    impressions, clicks and purchases by (request, item) gives the duplicate
    impressions, the clicks on no impression and the purchases after no click.
    ``events_outside_window`` counts the experiment's events the window leaves out
    (the other counts are over the events inside it)."""
    from sqlalchemy import text

    base = base or online_ctes(cuped_days, window)
    ctes = base.then(*health_parts(cuped_days, base))
    sql = ctes.sql(HEALTH_SELECT)
    row = conn.execute(text(sql), {"experiment": experiment}).one()
    return _health_counts(row._mapping, _outside_window(conn, experiment, window))


def _outside_window(conn: Connection, experiment: str, window: Window | None) -> int:
    """The experiment's events ``window`` leaves out (0 without a window)."""
    from sqlalchemy import text

    if not window:
        return 0
    outside = conn.execute(
        text(
            "SELECT COUNT(*) FROM events WHERE experiment = :experiment "
            f"AND NOT ({window.condition()})"
        ),
        {"experiment": experiment},
    ).scalar_one()
    return int(outside or 0)


_HEALTH_KEYS = (
    "users_in_several_arms",
    "users_seen",
    "users_analysed",
    "clicks_without_impression",
    "purchases_without_click",
    "duplicate_impressions",
    "events_outside_population",
    "events_before_exposure",
    "events",
    "first_ts",
    "last_ts",
    "events_far_outside",
)


def _health_counts(row: Any, outside: int) -> dict[str, Any]:
    """The health counts of :data:`HEALTH_SELECT`'s row (its columns
    :data:`_HEALTH_KEYS`) and the events outside the window."""
    out: dict[str, Any] = {"events_outside_window": outside}
    for key in _HEALTH_KEYS:
        value = row[key]
        if key in ("first_ts", "last_ts"):
            out[key] = value.isoformat(sep="T") if value is not None else None
        else:
            out[key] = int(value or 0)
    return out


def online_sums_sql(
    cuped_days: int,
    base: With,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
    daily: bool = True,
) -> str:
    """:data:`HEALTH_SELECT` and, with ``daily``, both daily series of
    :func:`daily_moments_sql` as one query over the kept per-user parts: per day
    and arm, the health counts and that day's moments of each series (columns
    after :data:`CUMULATIVE` and :data:`OWN_DAY`); one row of health counts alone
    when there is no day. (The per-arm moments stay a query of their own: in this
    one DuckDB's parallel sums of them differ from run to run in the last bits.)"""
    counts = Cte(
        "h_row",
        HEALTH_SELECT,
        ("user_arms", "population", "pair_counts", "totals", "analysed", "event_days"),
    )
    ctes = base.then(*health_parts(cuped_days, base), counts)
    if not daily:
        return ctes.sql("SELECT h.* FROM h_row h")
    series = ((CUMULATIVE, False), (OWN_DAY, True))
    ctes = ctes.then(*_daily_parts(cuped_days, caps, variables, series))
    return ctes.sql(
        "SELECT h.*, d.* FROM h_row h LEFT JOIN d_rows d ON 1 = 1 ORDER BY d.day, d.d_arm"
    )


Daily = list[tuple[str, dict[str, Moments]]]


@dataclass(frozen=True)
class OnlineSums:
    """What :func:`online_sums` returns: per-arm moments, the health counts (as
    :func:`health`) and the two daily series (by ISO day, then arm; empty when not
    asked for)."""

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
    """:func:`arm_moments`, then :func:`health` and the daily series from one
    statement (with a window, the events outside it are a third)."""
    from sqlalchemy import text

    moments = arm_moments(conn, experiment, cuped_days, base, caps, variables)
    sql = online_sums_sql(cuped_days, base, caps, variables, daily)
    rows = conn.execute(text(sql), {"experiment": experiment}).fetchall()
    cumulative = daily_moments(rows, variables, caps, CUMULATIVE) if daily else []
    own = daily_moments(rows, variables, caps, OWN_DAY) if daily else []
    health = _health_counts(rows[0]._mapping, _outside_window(conn, experiment, window))
    return OnlineSums(moments, health, cumulative, own)


#: The columns of ``ingests`` a report shows (:func:`ingest_row`).
INGEST_COLUMNS = ("ingest_id", "source", "checksum", "rows_read", "rows_inserted", "finished_at")
_OF_INGESTS = ", ".join(f"i.{c}" for c in INGEST_COLUMNS)
#: The ingests of the experiment bound to ``:experiment``, with its events in each.
INGESTS_SELECT = (
    f"SELECT {_OF_INGESTS}, COUNT(*) AS events FROM events e JOIN ingests i "
    f"ON i.ingest_id = e.ingest_id WHERE e.experiment = :experiment GROUP BY {_OF_INGESTS}"
)


def ingests(conn: Connection, experiment: str) -> tuple[dict[str, Any], ...]:
    """The ingests that brought the experiment's events (the report's provenance):
    source file, checksum, rows read and inserted, when, and how many of the
    experiment's events each holds; by ingest id."""
    from sqlalchemy import text

    rows = conn.execute(text(f"{INGESTS_SELECT} ORDER BY i.ingest_id"), {"experiment": experiment})
    return tuple(ingest_row(r) for r in rows)


def ingest_row(r: Any) -> dict[str, Any]:
    """One ingest as the report shows it, from :data:`INGEST_COLUMNS` and the count
    of the experiment's events."""
    return {
        "ingest_id": int(r[0]),
        "source": r[1],
        "checksum": r[2],
        "rows_read": int(r[3]),
        "rows_inserted": int(r[4]),
        "finished_at": r[5].isoformat(sep="T") if r[5] else None,
        "events_in_experiment": int(r[6]),
    }


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


@dataclass(frozen=True)
class CapValue:
    """A per-user variable capped at the ``quantile`` of all analysed users (both
    arms pooled): the ``cap`` (None when no user has a value) and, per arm, the
    users whose value was above it."""

    variable: str
    quantile: float
    cap: float | None
    users_capped: dict[str, int]


def cap_values_sql(
    variable: str, quantile: float, base: With, variables: VariableSet = BUILTIN
) -> str:
    """The pooled ``quantile`` of the per-user ``variable`` (linear interpolation,
    ``percentile_cont``: the same on DuckDB and PostgreSQL) and, per arm, how many
    users lie above it."""
    if variable not in {name for name, _ in variables.columns}:
        raise ValueError(f"cannot cap {variable!r}")
    q = float(quantile)
    cap = Cte(
        "cap",
        f"SELECT percentile_cont({q!r}) WITHIN GROUP (ORDER BY "
        f"CAST({variable} AS DOUBLE PRECISION)) AS value FROM user_metrics",
        ("user_metrics",),
    )
    return base.then(*user_metrics_cte(variables=variables), cap).sql(
        "SELECT u.arm, MIN(c.value) AS cap, "
        f"SUM(CASE WHEN u.{variable} > c.value THEN 1 ELSE 0 END) AS above "
        "FROM user_metrics u CROSS JOIN cap c GROUP BY u.arm ORDER BY u.arm"
    )


def cap_values(
    conn: Connection,
    experiment: str,
    quantiles: Mapping[str, float],
    base: With,
    variables: VariableSet = BUILTIN,
) -> dict[str, CapValue]:
    """Per variable to cap: its cap (docs/metrics.md#outlier-capping)."""
    from sqlalchemy import text

    out = {}
    for variable, quantile in quantiles.items():
        rows = conn.execute(
            text(cap_values_sql(variable, quantile, base, variables)), {"experiment": experiment}
        ).fetchall()
        cap = _num(rows[0].cap) if rows and rows[0].cap is not None else None
        out[variable] = CapValue(
            variable=variable,
            quantile=quantile,
            cap=cap,
            users_capped={str(r.arm): int(r.above or 0) for r in rows},
        )
    return out
