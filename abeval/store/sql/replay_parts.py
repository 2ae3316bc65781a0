"""The SQL parts of the log replay: an experiment's logged impressions as ranked lists.

Each served request (``request_id``) is a ranked list: its items are the
impression rows, ranked by their logged ``position``. Lists and items are keyed
by the integers an ingest gives them (``request_no``, ``item_no``: migration 0010;
a table read in place presents its text keys under those names), so every
grouping and join below is on integers; only the message about a repeated item
reads the text. The relevance of each
(request, item) is its strongest event under the caller's gains (event type →
gain). The population is the experiment's analysed users
(:mod:`abeval.store.sql.population`), and, unless told otherwise, only their
impressions from their first exposure on count.

The relations are built here as parts (:func:`replay_ctes`: ``ranked``,
``judged`` for the metric kernels, :mod:`abeval.metrics.kernel`, and the
beyond-accuracy inputs, :data:`BEYOND_RELATIONS`) with the statements that read
them; :mod:`abeval.store.sql.replay` runs them.

All SQL is portable (DuckDB, PostgreSQL 15); every user-supplied value is a
bind parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abeval.store.sql.parts import Cte, With
from abeval.store.sql.population import Window, experiment_events, population_parts

# The relations :func:`replay_ctes` defines for the beyond-accuracy metrics, by role
# (the fields of :class:`abeval.metrics.BeyondInputs`).
BEYOND_RELATIONS: Mapping[str, str] = {
    "ranked": "ranked",
    "catalogue": "r_catalogue",
    "popularity": "r_popularity",
    "interactions": "r_interactions",
}


def gain_case(gains: Mapping[str, float]) -> tuple[str, str, dict[str, Any]]:
    """(CASE expression, IN list, parameters) for the relevance of an event type;
    the strongest gain first."""
    params: dict[str, Any] = {}
    whens: list[str] = []
    names: list[str] = []
    for i, (event_type, gain) in enumerate(sorted(gains.items(), key=lambda kv: -kv[1])):
        params[f"rel_type_{i}"] = event_type
        params[f"rel_gain_{i}"] = float(gain)
        whens.append(
            f"WHEN event_type = :rel_type_{i} THEN CAST(:rel_gain_{i} AS DOUBLE PRECISION)"
        )
        names.append(f":rel_type_{i}")
    case = f"CASE {' '.join(whens)} ELSE CAST(0 AS DOUBLE PRECISION) END"
    return case, ", ".join(names), params


# Each analysed user's number in the order of ``user_id``: the hot aggregates group
# and compare integers, and the least number is the least ``user_id`` (the same
# order), so a list's user is the one it was. Not a dictionary of the store: it is
# numbered anew in each replay, from the population only.
USER_NUMBERS = (
    "SELECT user_id, arm, first_ts, ROW_NUMBER() OVER (ORDER BY user_id) AS user_no FROM population"
)


# A list's ranks fit the bits of an integer when they are 0..TIE_BITS: the list has
# two items at one rank exactly when the sum of 2^rank over its items differs from
# their bitwise OR (a rank shown twice carries; distinct ranks never do). The sum
# stays below 2^63 for lists of fewer than 2^22 items.
TIE_BITS = 40


_RANK_BIT = (
    f"CASE WHEN rank BETWEEN 0 AND {TIE_BITS} THEN CAST(POWER(2, rank) AS BIGINT) "
    "ELSE CAST(0 AS BIGINT) END"
)


# The per-list pass: one row per (arm, list) of ``ranked`` with its items, impression
# rows and repeats, whether two of its items share a rank (``tied``: 1 or 0, NULL
# where a rank is outside 0..TIE_BITS and only counting the ranks can say), and
# the least and greatest user of its items (equal but where the request was logged
# for several users); ``contiguous`` is 1 where its ranks are exactly 1..items (the
# kernel's AUC then needs its relevant items only).
PER_LIST = (
    "SELECT grp, list_id, MIN(user_id) AS user_id, MAX(user_id) AS last_user, "
    "COUNT(*) AS items, SUM(copies) AS impressions, SUM(copies - 1) AS extra, "
    f"CASE WHEN MIN(rank) >= 0 AND MAX(rank) <= {TIE_BITS} THEN "
    "CASE WHEN BIT_OR(rank_bit) = SUM(rank_bit) THEN 0 ELSE 1 END END AS tied, "
    f"CASE WHEN MIN(rank) = 1 AND MAX(rank) = COUNT(*) AND COUNT(*) <= {TIE_BITS} "
    "AND BIT_OR(rank_bit) = SUM(rank_bit) THEN 1 ELSE 0 END AS contiguous "
    f"FROM (SELECT grp, list_id, user_id, rank, copies, {_RANK_BIT} AS rank_bit FROM {{ranked}}) r "
    "GROUP BY grp, list_id"
)


# ``ranked``'s distinct (arm, user, list), the lists the kernel averages per user:
# each item's user is the least of those it was shown to, so a request logged for
# several users may be a list of each of them; a list of one user is its row of
# ``r_lists``.
LIST_USERS = (
    "SELECT grp, user_id, list_id, items, contiguous FROM {r_lists} WHERE user_id = last_user "
    "UNION ALL SELECT DISTINCT r.grp, r.user_id, r.list_id, l.items, l.contiguous FROM {ranked} r "
    "JOIN {r_lists} l ON l.grp = r.grp AND l.list_id = r.list_id WHERE l.user_id <> l.last_user"
)


def replay_ctes(
    gains: Mapping[str, float],
    *,
    post_exposure_only: bool = True,
    window: Window | None = None,
    population: str | None = None,
    read: Mapping[str, str] | None = None,
    shown_once: bool = False,
) -> tuple[With, dict[str, Any]]:
    """The parts that define ``ranked`` and ``judged`` for the kernels,
    plus ``r_imp`` (impressions of analysed users), ``r_rel`` (relevance per request
    and item), ``r_lists`` (the per-list pass: one row per arm and list of ``ranked``,
    :data:`PER_LIST`), ``r_list_users`` (the kernel's lists, :data:`LIST_USERS`) and
    the beyond-accuracy inputs ``r_catalogue``, ``r_interactions``, ``r_popularity``;
    and the bind parameters besides ``:experiment``. ``ranked.user_id`` is the user's
    number in this replay (:data:`USER_NUMBERS`), not the text of the log.

    ``population`` names a table already holding the experiment's analysed
    population (``user_id, arm, first_ts``, as :mod:`abeval.store.sql.population`
    defines it), such as the one the online report computed on the same
    connection; without it the population is computed here.

    ``read`` maps the parts computed into tables already (``ranked``, ``r_lists``)
    to those tables: the parts that read them several times in one statement read
    the tables, not the parts (DuckDB would first copy a part read twice).

    ``shown_once``: the caller knows that no item was shown twice in one request in
    these events (the report's health counts found no duplicate impression), so each
    impression is already its list's row and the grouping is skipped (the largest
    aggregate of the replay: 5M groups at 10M events)."""
    case, in_list, params = gain_case(gains)
    tables = {"ranked": "ranked", "r_lists": "r_lists", **(read or {})}
    after = "AND e.ts >= p.first_ts" if post_exposure_only else ""
    # An item shown more than once in a request counts once, at its first (best)
    # position (``copies`` says how often it was shown; unless the convention is
    # ``duplicates=dedupe`` a repeat is an error, raised before any metric reads
    # ``ranked``). An aggregate, not a sorted window over every impression.
    first = (
        "SELECT grp, user_no AS user_id, list_id, item_id, position, 1 AS copies FROM r_imp"
        if shown_once
        else "SELECT grp, MIN(user_no) AS user_id, list_id, item_id, MIN(position) AS position, "
        "COUNT(*) AS copies FROM r_imp GROUP BY grp, list_id, item_id"
    )
    base = population_parts(window) if population is None else _given_population(population, window)
    ctes = base.then(
        Cte("r_users", USER_NUMBERS, ("population",)),
        Cte(
            "r_imp",
            "SELECT /*+ BROADCAST(p) */ p.arm AS grp, p.user_no, e.request_no AS list_id, "
            "e.item_no AS item_id, "
            "e.position, e.request_id AS list_text, e.item_id AS item_text FROM exp_events e "
            "JOIN r_users p ON p.user_id = e.user_id "
            "WHERE e.event_type = 'impression' AND e.request_no IS NOT NULL "
            f"AND e.item_no IS NOT NULL AND e.position IS NOT NULL {after}",
            ("exp_events", "r_users"),
        ),
        Cte(
            "r_rel",
            f"SELECT request_no AS list_id, item_no AS item_id, MAX({case}) AS gain "
            f"FROM exp_events WHERE event_type IN ({in_list}) AND request_no IS NOT NULL "
            "AND item_no IS NOT NULL GROUP BY request_no, item_no",
            ("exp_events",),
        ),
        Cte("r_first", first, ("r_imp",)),
        Cte(
            "ranked",
            "SELECT f.grp, f.user_id, f.list_id, f.item_id, f.position AS rank, f.copies, "
            "COALESCE(r.gain, CAST(0 AS DOUBLE PRECISION)) AS gain FROM r_first f "
            "LEFT JOIN r_rel r ON r.list_id = f.list_id AND r.item_id = f.item_id",
            ("r_first", "r_rel"),
        ),
        Cte("r_lists", PER_LIST.format(**tables), ("ranked",)),
        Cte("r_list_users", LIST_USERS.format(**tables), ("ranked", "r_lists")),
        Cte("judged", "SELECT list_id, gain FROM ranked WHERE gain > 0", ("ranked",)),
        # The catalogue reads the events through a part of its own: DuckDB computes a
        # part that one statement reads twice into a table first (all the events'
        # rows, 2.5x the cost of ``r_items`` at 10M events); two parts read once are
        # two scans, as on PostgreSQL and Spark.
        Cte("r_item_events", experiment_events(window).body),
        Cte(
            "r_items",
            # every item of the experiment's events (user_id NULL: the catalogue),
            # then each analysed user's relevant items (the interactions)
            "SELECT c.item_id, CAST(NULL AS VARCHAR) AS user_id FROM "
            "(SELECT DISTINCT item_no AS item_id FROM r_item_events WHERE item_no IS NOT NULL) c "
            "UNION ALL SELECT i.item_id, i.user_id FROM "
            "(SELECT DISTINCT e.user_id, e.item_no AS item_id FROM exp_events e "
            f"JOIN population p ON p.user_id = e.user_id WHERE e.event_type IN ({in_list}) "
            f"AND e.item_no IS NOT NULL {after}) i",
            ("r_item_events", "exp_events", "population"),
        ),
        Cte("r_catalogue", "SELECT item_id FROM r_items WHERE user_id IS NULL", ("r_items",)),
        Cte(
            "r_interactions",
            "SELECT user_id, item_id FROM r_items WHERE user_id IS NOT NULL",
            ("r_items",),
        ),
        Cte(
            "r_popularity",
            "SELECT item_id, CAST(COUNT(*) AS DOUBLE PRECISION) / "
            "(SELECT COUNT(*) FROM population) AS share FROM r_interactions GROUP BY item_id",
            ("population", "r_interactions"),
        ),
    )
    return ctes, params


def _given_population(table: str, window: Window | None) -> With:
    """``exp_events`` and ``population`` when the population was computed already
    (by the online pass, over the same window)."""
    return With(
        (
            experiment_events(window),
            Cte("population", f"SELECT user_id, arm, first_ts FROM {table}"),
        )
    )


# r_rel's pairs minus those ``ranked`` shows: its gain comes from r_rel and is
# positive exactly where a pair matched (every gain is positive). Counting the few
# relevant rows of ``ranked`` keeps the memory of an anti-join that would hash
# every shown item (0.5 GB at 10M events).
NOT_SHOWN_SQL = (
    "SELECT (SELECT COUNT(*) FROM r_rel) - (SELECT COUNT(*) FROM "
    "(SELECT DISTINCT list_id, item_id FROM {ranked} WHERE gain > 0) s) AS n"
)


# The arms' counts from the per-list pass: a list is one row of ``r_lists``, its
# users those of ``r_list_users``; the lists whose ranks the bits could not check
# (``tied`` NULL) have their ranks counted.
ARM_COUNTS_CTES = (
    """r_arms AS (SELECT arm AS grp, COUNT(*) AS users FROM population GROUP BY arm),
r_list_arm AS (
    SELECT grp, COUNT(*) AS requests, SUM(impressions) AS impressions, SUM(extra) AS extra,
           SUM(CASE WHEN tied = 1 THEN 1 ELSE 0 END) AS tied
    FROM {r_lists} GROUP BY grp
),
r_user_arm AS (SELECT grp, COUNT(DISTINCT user_id) AS users FROM r_list_users GROUP BY grp),
r_ties AS (
    SELECT grp, COUNT(DISTINCT list_id) AS tied FROM (
        SELECT r.grp, r.list_id, r.rank FROM {ranked} r
        JOIN {r_lists} l ON l.grp = r.grp AND l.list_id = r.list_id WHERE l.tied IS NULL
        GROUP BY r.grp, r.list_id, r.rank HAVING COUNT(*) > 1
    ) t GROUP BY grp
),
r_not_shown AS ("""
    + NOT_SHOWN_SQL
    + ")"
)


ARM_COUNTS_SELECT = """\
SELECT a.grp AS arm, a.users, COALESCE(u.users, 0) AS users_with_requests,
       COALESCE(i.requests, 0) AS requests, COALESCE(i.impressions, 0) AS impressions,
       COALESCE(i.extra, 0) AS duplicates, COALESCE(i.tied, 0) + COALESCE(t.tied, 0) AS tied,
       n.n AS not_shown
FROM r_arms a
LEFT JOIN r_list_arm i ON i.grp = a.grp
LEFT JOIN r_user_arm u ON u.grp = a.grp
LEFT JOIN r_ties t ON t.grp = a.grp
CROSS JOIN r_not_shown n
ORDER BY a.grp"""


FIRST_REPEAT_SQL = (
    "SELECT MIN(list_text) AS list_id, MIN(item_text) AS item_id, COUNT(*) AS c, "
    "MIN(position) AS first_pos, MAX(position) AS last_pos FROM r_imp "
    "GROUP BY list_id, item_id HAVING COUNT(*) > 1 ORDER BY 1, 2 LIMIT 1"
)
