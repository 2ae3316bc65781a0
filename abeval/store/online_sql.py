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
from dataclasses import dataclass
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


def _indicators(variables: VariableSet, pre: bool = True) -> str:
    """The indicator columns (1 when the summed variable is above 0), and their
    pre-period copies when ``pre``."""
    prefixes = ("", "pre_") if pre else ("",)
    return ", ".join(
        f"CASE WHEN {p}{of} > 0 THEN 1 ELSE 0 END AS {p}{name}"
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


def _moment_columns(variables: tuple[str, ...], prefix: str = "") -> list[str]:
    cols = ["COUNT(*) AS n"]
    cols += [f"SUM(CAST({prefix}{v} AS DOUBLE PRECISION)) AS s_{v}" for v in variables]
    cols += [f"VAR_SAMP(CAST({prefix}{v} AS DOUBLE PRECISION)) AS v_{v}" for v in variables]
    cols += [
        f"COVAR_SAMP(CAST({prefix}{a} AS DOUBLE PRECISION), CAST({prefix}{b} AS DOUBLE PRECISION))"
        f" AS c_{a}__{b}"
        for a, b in combinations(variables, 2)
    ]
    return cols


def _moments_from_row(row: Any, variables: tuple[str, ...]) -> Moments:
    m = row._mapping
    n = int(m["n"])
    sums = {v: _num(m[f"s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        cross[(v, v)] = _num(m[f"v_{v}"]) * (n - 1) if n > 1 else 0.0
    for a, b in combinations(variables, 2):
        cross[(a, b)] = _num(m[f"c_{a}__{b}"]) * (n - 1) if n > 1 else 0.0
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
        {"experiment": experiment, "segment": segment},
    )
    for r in rows:
        out.setdefault(str(r.segment), {})[str(r.arm)] = _moments_from_row(r, variables.all_names)
    return out


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
    enrolled and idle that day), whose lift shows a novelty effect wear off."""
    window = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    summed = [name for name, _ in variables.columns]
    selected = ", ".join(c if c == n else f"{c} AS {n}" for n, c in variables.columns)
    cum = ", ".join(
        _capped(
            v,
            caps,
            f"COALESCE(d.{v}, 0)"
            if own_day
            else f"SUM(COALESCE(d.{v}, 0)) OVER (PARTITION BY u.user_id ORDER BY u.day {window})",
        )
        + f" AS {v}"
        for v in summed
    )
    ctes = (base or online_ctes(cuped_days, variables=variables)).then(
        Cte(
            "daily",
            f"SELECT user_id, day, {selected} FROM user_day WHERE phase = 1",
            ("user_day",),
        ),
        Cte(
            "days",
            "SELECT DISTINCT CAST(ts AS DATE) AS day FROM exp_events e "
            "WHERE e.ts >= (SELECT MIN(first_ts) FROM population) "
            f"AND NOT {far_condition(cuped_days)}",
            ("exp_events", "population"),
        ),
        Cte(
            "user_days",
            "SELECT p.user_id, p.arm, d.day FROM population p "
            "JOIN days d ON d.day >= CAST(p.first_ts AS DATE)",
            ("population", "days"),
        ),
        Cte(
            "cumulative",
            f"SELECT u.arm, u.day, {cum} FROM user_days u "
            "LEFT JOIN daily d ON d.user_id = u.user_id AND d.day = u.day",
            ("user_days", "daily"),
        ),
        Cte(
            "user_metrics",
            f"SELECT *, {_indicators(variables, pre=False)} FROM cumulative",
            ("cumulative",),
        ),
    )
    return ctes.sql(
        f"SELECT day, arm, {', '.join(_moment_columns(variables.names))} "
        "FROM user_metrics GROUP BY day, arm ORDER BY day, arm"
    )


def daily_moments(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    own_day: bool = False,
    variables: VariableSet = BUILTIN,
) -> list[tuple[str, dict[str, Moments]]]:
    """:func:`daily_moments_sql`'s rows, by day (ISO date) and arm."""
    from sqlalchemy import text

    out: dict[str, dict[str, Moments]] = {}
    sql = daily_moments_sql(cuped_days, base, caps, own_day, variables)
    rows = conn.execute(text(sql), {"experiment": experiment})
    for r in rows:
        day = r.day.isoformat() if hasattr(r.day, "isoformat") else str(r.day)
        out.setdefault(day, {})[str(r.arm)] = _moments_from_row(r, variables.names)
    return sorted(out.items())


#: The parts of the health counts that follow :func:`online_ctes`.
HEALTH_PARTS = (
    Cte(
        "pairs",
        """
    SELECT
        COUNT(*) FILTER (WHERE event_type = 'impression') AS impressions,
        COUNT(*) FILTER (WHERE event_type = 'click') AS clicks,
        COUNT(*) FILTER (WHERE event_type = 'purchase') AS purchases
    FROM exp_events
    WHERE event_type IN ('impression', 'click', 'purchase')
      AND request_no IS NOT NULL AND item_no IS NOT NULL
    GROUP BY request_no, item_no
""",
        ("exp_events",),
    ),
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


def health_select(cuped_days: int) -> str:
    """The health counts' ``SELECT``, after :func:`online_ctes` and :data:`HEALTH_PARTS`."""
    return f"""SELECT
    (SELECT COUNT(*) FROM user_arms WHERE n_arms > 1) AS users_in_several_arms,
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
    (SELECT COUNT(*) FROM exp_events e WHERE {far_condition(cuped_days)}) AS events_far_outside
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

    ctes = (base or online_ctes(cuped_days, window)).then(*HEALTH_PARTS)
    sql = ctes.sql(health_select(cuped_days))
    row = conn.execute(text(sql), {"experiment": experiment}).one()
    outside = 0
    if window:
        outside = conn.execute(
            text(
                "SELECT COUNT(*) FROM events WHERE experiment = :experiment "
                f"AND NOT ({window.condition()})"
            ),
            {"experiment": experiment},
        ).scalar_one()
    out: dict[str, Any] = {"events_outside_window": int(outside or 0)}
    for key, value in row._mapping.items():
        if key in ("first_ts", "last_ts"):
            out[key] = value.isoformat(sep="T") if value is not None else None
        else:
            out[key] = int(value or 0)
    return out


INGESTS_SQL = (
    "SELECT i.ingest_id, i.source, i.checksum, i.rows_read, i.rows_inserted, "
    "i.finished_at, COUNT(*) AS events FROM events e JOIN ingests i "
    "ON i.ingest_id = e.ingest_id WHERE e.experiment = :e "
    "GROUP BY i.ingest_id, i.source, i.checksum, i.rows_read, i.rows_inserted, "
    "i.finished_at ORDER BY i.ingest_id"
)


def ingests(conn: Connection, experiment: str) -> tuple[dict[str, Any], ...]:
    """The ingests that brought the experiment's events (the report's provenance):
    source file, checksum, rows read and inserted, when, and how many of the
    experiment's events each holds; by ingest id."""
    from sqlalchemy import text

    rows = conn.execute(text(INGESTS_SQL), {"e": experiment})
    return tuple(
        {
            "ingest_id": int(r[0]),
            "source": r[1],
            "checksum": r[2],
            "rows_read": int(r[3]),
            "rows_inserted": int(r[4]),
            "finished_at": r[5].isoformat(sep="T") if r[5] else None,
            "events_in_experiment": int(r[6]),
        }
        for r in rows
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
