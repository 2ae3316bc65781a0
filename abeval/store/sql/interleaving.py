"""The per-user sums of an interleaved comparison (docs/metrics.md#interleaving),
computed in the engine.

A click (or a purchase) is credited to the team of the impression with the same
request and item. Per request with credit, A wins when A's items got more credit
than B's, loses when B's got more, ties otherwise; per user, the counts wᵤ, lᵤ,
tᵤ of won, lost and tied requests. The query returns, over the users with at
least one such request, the counts and the sums the statistics layer needs
(``abeval.stats.interleaving.InterleavingStats.from_sums`` takes them by name):
Σ(wᵤ − lᵤ)², Σrᵤ², Σ(wᵤ − lᵤ)·rᵤ with rᵤ = wᵤ + lᵤ + tᵤ. Portable SQL (DuckDB,
PostgreSQL). This first step reads all the experiment's events: no analysis
window and no exposure rule yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

Credit = Literal["click", "purchase"]

INTERLEAVING_SUMS_SQL = """
WITH shown AS (
    SELECT request_id, item_id, MIN(team) AS team
    FROM events
    WHERE experiment = :experiment AND event_type = 'impression' AND team IS NOT NULL
    GROUP BY request_id, item_id
),
credit AS (
    SELECT e.user_id, e.request_id,
        SUM(CASE WHEN s.team = :team_a THEN 1 ELSE 0 END) AS a,
        SUM(CASE WHEN s.team = :team_b THEN 1 ELSE 0 END) AS b
    FROM events e
    JOIN shown s ON s.request_id = e.request_id AND s.item_id = e.item_id
    WHERE e.experiment = :experiment AND e.event_type = :credit
    GROUP BY e.user_id, e.request_id
),
per_user AS (
    SELECT user_id,
        SUM(CASE WHEN a > b THEN 1 ELSE 0 END) AS w,
        SUM(CASE WHEN a < b THEN 1 ELSE 0 END) AS l,
        SUM(CASE WHEN a = b AND a > 0 THEN 1 ELSE 0 END) AS t
    FROM credit
    GROUP BY user_id
)
SELECT
    COUNT(*) AS users,
    COALESCE(SUM(w), 0) AS wins,
    COALESCE(SUM(l), 0) AS losses,
    COALESCE(SUM(t), 0) AS ties,
    COALESCE(SUM(CASE WHEN w > l THEN 1 ELSE 0 END), 0) AS users_a,
    COALESCE(SUM(CASE WHEN w < l THEN 1 ELSE 0 END), 0) AS users_b,
    COALESCE(SUM((w - l) * (w - l)), 0) AS sum_diff_squares,
    COALESCE(SUM((w + l + t) * (w + l + t)), 0) AS sum_requests_squares,
    COALESCE(SUM((w - l) * (w + l + t)), 0) AS sum_diff_requests
FROM per_user
WHERE w + l + t > 0
"""


def interleaving_sums(
    conn: Connection, experiment: str, team_a: str, team_b: str, credit: Credit = "click"
) -> dict[str, float]:
    """The sums of :data:`INTERLEAVING_SUMS_SQL` for ``experiment``, A = ``team_a``,
    crediting ``credit`` events, as floats by name."""
    from sqlalchemy import text

    row = conn.execute(
        text(INTERLEAVING_SUMS_SQL),
        {"experiment": experiment, "team_a": team_a, "team_b": team_b, "credit": credit},
    ).one()
    return {k: float(v) for k, v in row._mapping.items()}


#: The teams the experiment's impressions name, in order.
TEAMS_SQL = """
SELECT DISTINCT team FROM events
WHERE experiment = :experiment AND event_type = 'impression' AND team IS NOT NULL
ORDER BY team
"""

#: Per team, the requests whose top impression (the smallest position) is that
#: team's: the first pick of the first round, decided by a fair coin in team draft.
#: Then, as a row of its own (team NULL), the clicks on an item that no impression
#: of the same request credits to a team.
BALANCE_SQL = """
WITH shown AS (
    SELECT request_id, item_id, position, team
    FROM events
    WHERE experiment = :experiment AND event_type = 'impression' AND team IS NOT NULL
),
top AS (
    SELECT request_id, MIN(position) AS position FROM shown GROUP BY request_id
),
first_pick AS (
    SELECT s.request_id, MIN(s.team) AS team
    FROM shown s JOIN top t ON t.request_id = s.request_id AND t.position = s.position
    GROUP BY s.request_id
)
SELECT team, COUNT(*) AS n FROM first_pick GROUP BY team
UNION ALL
SELECT NULL AS team, COUNT(*) AS n
FROM events e
WHERE e.experiment = :experiment AND e.event_type = 'click' AND NOT EXISTS (
    SELECT 1 FROM shown s WHERE s.request_id = e.request_id AND s.item_id = e.item_id
)
"""


def experiment_teams(conn: Connection, experiment: str) -> list[str]:
    """The teams named by ``experiment``'s impressions, sorted; empty when it is not
    interleaved."""
    from sqlalchemy import text

    rows = conn.execute(text(TEAMS_SQL), {"experiment": experiment}).fetchall()
    return [str(r[0]) for r in rows]


def team_balance(conn: Connection, experiment: str) -> tuple[dict[str, int], int]:
    """The first picks per team (requests whose top item is the team's) and the
    clicks no team is credited with, from :data:`BALANCE_SQL`."""
    from sqlalchemy import text

    picks: dict[str, int] = {}
    uncredited = 0
    for team, n in conn.execute(text(BALANCE_SQL), {"experiment": experiment}).fetchall():
        if team is None:
            uncredited = int(n)
        else:
            picks[str(team)] = int(n)
    return picks, uncredited
