"""The analysed population of an experiment, as SQL common table expressions.

The population (docs/metrics.md#per-user-values) is the users with an ``exposure`` event when
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
user_arms AS (
    SELECT user_id, COUNT(DISTINCT arm) AS n_arms, MIN(arm) AS arm,
        MIN(CASE WHEN event_type = 'exposure' THEN ts END) AS first_exposure,
        MIN(ts) AS first_event, MAX(ts) AS last_event, COUNT(*) AS events
    FROM exp_events GROUP BY user_id
),
population AS (
    SELECT user_id, arm,
        CASE WHEN first_exposure IS NOT NULL THEN first_exposure ELSE first_event END
            AS first_ts
    FROM user_arms
    WHERE n_arms = 1
      AND (first_exposure IS NOT NULL
           OR NOT EXISTS (SELECT 1 FROM user_arms x WHERE x.first_exposure IS NOT NULL))
)"""


def population_ctes() -> str:
    """CTEs ``exp_events``, ``user_arms`` (one pass over the experiment's events
    per user: arms seen, first exposure, first and last event, events) and ``population``
    (user_id, arm, first_ts), to follow a ``WITH``."""
    return POPULATION_CTES
