"""The analysed population of an experiment, as SQL common table expressions.

DESIGN.md section 2: the population is the users with an ``exposure`` event when
the experiment has any, else the users with any event. A user seen in more than
one arm is contaminated: counted and left out. ``first_ts`` is the user's first
qualifying event (the start of their post-exposure period; CUPED's pre-period ends
there).

Every query that analyses an experiment starts with :func:`population_ctes` and
binds the parameter ``:experiment``.
"""

from __future__ import annotations

POPULATION_CTES = """\
exp_events AS (
    SELECT * FROM events WHERE experiment = :experiment
),
qualifying AS (
    SELECT user_id, ts FROM exp_events
    WHERE event_type = 'exposure'
       OR NOT EXISTS (SELECT 1 FROM exp_events x WHERE x.event_type = 'exposure')
),
user_arms AS (
    SELECT user_id, COUNT(DISTINCT arm) AS n_arms, MIN(arm) AS arm
    FROM exp_events GROUP BY user_id
),
population AS (
    SELECT q.user_id, ua.arm, MIN(q.ts) AS first_ts
    FROM qualifying q JOIN user_arms ua ON ua.user_id = q.user_id
    WHERE ua.n_arms = 1
    GROUP BY q.user_id, ua.arm
)"""


def population_ctes() -> str:
    """CTEs ``exp_events``, ``qualifying``, ``user_arms`` and ``population``
    (user_id, arm, first_ts), to follow a ``WITH``."""
    return POPULATION_CTES
