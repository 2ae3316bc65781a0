"""The report's health counts: users in several arms, users seen and analysed,
clicks without an impression, purchases after no click, duplicate impressions,
events outside the population, before exposure, outside the window and far
outside the experiment, and the first and last timestamps.

One grouping of the impressions, clicks and purchases by (request, item) gives
the pair counts; the rest reads the population parts and ``user_day``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abeval.store.sql.online_daily import day_parts, events_copy
from abeval.store.sql.online_pass import online_ctes
from abeval.store.sql.parts import Cte, With
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def health_parts(cuped_days: int, base: With) -> tuple[Cte, ...]:
    """The parts of the health counts that follow
    :func:`~abeval.store.sql.online_pass.online_ctes` (``base``), with
    :func:`~abeval.store.sql.online_daily.day_parts`."""
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

#: The health counts' ``SELECT``, after
#: :func:`~abeval.store.sql.online_pass.online_ctes` and :func:`health_parts`.
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
    return health_counts(row._mapping, outside_window(conn, experiment, window))


def outside_window(conn: Connection, experiment: str, window: Window | None) -> int:
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


def health_counts(row: Any, outside: int) -> dict[str, Any]:
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
