"""Checks over the rows of one request: the impressions of a logged list that
carry logging probabilities must describe one list.

- ``propensity_given_above`` is given for every impression of a request or for
  none (the probability of a list's top k is the product of its steps, so one
  missing step leaves every lower position without a weight);
- an impression with a probability (``propensity`` or
  ``propensity_given_above``) is the only item at its position in its request;
- an interleaved request (one whose impressions name a ``team``, the ranker that
  contributed the item) names the team of every impression, and at most two
  teams: team draft merges the lists of exactly two rankers; a list of two or
  more items names both (each round both rankers pick); in an experiment whose
  requests name teams every request does, and the experiment has one arm (every
  user sees the merged list).

Both are checked over the good rows of one file. A request at fault has all its
impression rows refused, with the same reason, as a bad row is.
"""

from __future__ import annotations

from typing import Any

from abeval.store.events_format import PROBABILITIES

TABLE = "abeval_request_faults"
_GIVEN = "propensity_given_above"
_TEAM = "team"


def may_fault(columns: list[str]) -> bool:
    """Whether a file with these columns can break a request check at all."""
    return any(c in columns for c in (*PROBABILITIES, _TEAM))


def find_request_faults(duck: Any, relation: str, columns: list[str]) -> int:
    """``abeval_request_faults(experiment, request_id, column_name, reason)``: the
    requests of ``relation`` (rows with the events table's columns) at fault,
    one row each; return how many. Without a probability column in the file
    the table is empty and nothing is read."""
    empty = (
        "SELECT CAST(NULL AS VARCHAR) AS experiment, CAST(NULL AS VARCHAR) AS request_id, "
        "CAST(NULL AS VARCHAR) AS column_name, CAST(NULL AS VARCHAR) AS reason WHERE false"
    )
    if not may_fault(columns):
        duck.execute(f"CREATE OR REPLACE TEMP TABLE {TABLE} AS {empty}")
        return 0
    quoted = "'''' || request_id || ''''"
    has_p = " OR ".join(f"{c} IS NOT NULL" for c in PROBABILITIES)
    parts = []
    if _GIVEN in columns:  # without the column no impression has it: none is mixed
        parts.append(
            f"SELECT experiment, request_id, '{_GIVEN}' AS column_name, 'request ' || {quoted} "
            f"|| ' has {_GIVEN} on ' || count({_GIVEN}) || ' of its ' || count(*) || ' "
            "impressions; give it for every position of the request or for none' AS reason, "
            f"0 AS k FROM {relation} WHERE event_type = 'impression' GROUP BY experiment, "
            f"request_id HAVING count({_GIVEN}) > 0 AND count({_GIVEN}) < count(*)"
        )
    if _TEAM in columns:
        parts += _team_faults(relation, quoted)
    logged = f"{relation} WHERE event_type = 'impression' AND ({has_p})"
    if any(c in columns for c in PROBABILITIES) and _may_crowd(duck, logged):
        parts.append(
            "SELECT experiment, request_id, 'position' AS column_name, 'request ' || "
            f"{quoted} || ' shows ' || count(DISTINCT item_id) || ' items at position ' || "
            "position || ' with a logging probability; a logged list has one item per "
            f"position' AS reason, position AS k FROM {logged} "
            "GROUP BY experiment, request_id, position HAVING count(DISTINCT item_id) > 1"
        )
    if not parts:
        duck.execute(f"CREATE OR REPLACE TEMP TABLE {TABLE} AS {empty}")
        return 0
    duck.execute(
        f"CREATE OR REPLACE TEMP TABLE {TABLE} AS SELECT experiment, request_id, "
        "arg_min(column_name, k) AS column_name, arg_min(reason, k) AS reason "
        f"FROM ({' UNION ALL '.join(parts)}) f GROUP BY experiment, request_id"
    )
    return int(duck.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])


def _team_faults(relation: str, quoted: str) -> list[str]:
    """The two team checks over the impressions of ``relation`` (interleaving)."""
    impressions = f"FROM {relation} WHERE event_type = 'impression' GROUP BY experiment, request_id"
    return [
        f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
        f"|| ' names a team on ' || count({_TEAM}) || ' of its ' || count(*) || ' impressions; "
        "an interleaved request names the ranker of every impression' AS reason, "
        f"-2 AS k {impressions} HAVING count({_TEAM}) > 0 AND count({_TEAM}) < count(*)",
        f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
        f"|| ' names ' || count(DISTINCT {_TEAM}) || ' teams (' || "
        f"string_agg(DISTINCT {_TEAM}, ', ' ORDER BY {_TEAM}) || '); an interleaved list "
        f"merges exactly two rankers' AS reason, -1 AS k {impressions} "
        f"HAVING count(DISTINCT {_TEAM}) > 2",
        f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
        f"|| ' names only ' || min({_TEAM}) || ' on its ' || count(*) || ' impressions; team "
        "draft gives each of the two rankers a pick every round, so a list of two or more "
        f"items names both' AS reason, -3 AS k {impressions} "
        f"HAVING count(DISTINCT {_TEAM}) = 1 AND count({_TEAM}) = count(*) "
        "AND count(DISTINCT item_id) > 1",
        f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
        f"|| ' names no team, but experiment ' || {_quoted('experiment')} || ' is "
        "interleaved (its other requests name teams); name the ranker of every impression' "
        f"AS reason, -4 AS k {impressions} HAVING count({_TEAM}) = 0 AND experiment IN "
        f"(SELECT experiment FROM {relation} WHERE {_TEAM} IS NOT NULL)",
        f"SELECT r.experiment, r.request_id, '{_TEAM}' AS column_name, 'experiment ' || "
        f"{_quoted('r.experiment')} || ' is interleaved (request ' || "
        f"{_quoted('r.request_id')} || ' names teams) but has ' || a.arms || ' arms (' || "
        "a.names || '); every user of an interleaved experiment sees the merged list: give "
        "its rows one arm, and load an A/B test of the same rankers as an experiment of its "
        "own' AS reason, -5 AS k FROM "
        f"(SELECT DISTINCT experiment, request_id FROM {relation} WHERE {_TEAM} IS NOT NULL) r "
        "JOIN (SELECT experiment, count(DISTINCT arm) AS arms, string_agg(DISTINCT arm, ', ' "
        f"ORDER BY arm) AS names FROM {relation} GROUP BY experiment "
        "HAVING count(DISTINCT arm) > 1) a ON a.experiment = r.experiment",
    ]


def _quoted(column: str) -> str:
    """SQL: ``column``'s value between single quotes, as a message names it."""
    return f"'''' || {column} || ''''"


def at_fault(alias: str) -> str:
    """SQL joining condition: row ``alias`` is an impression of a request of
    :data:`TABLE` (aliased ``f``)."""
    return (
        f"{alias}.event_type = 'impression' AND {alias}.experiment = f.experiment "
        f"AND {alias}.request_id = f.request_id"
    )


def _may_crowd(duck: Any, logged: str) -> bool:
    """Whether two rows of ``logged`` (impressions with a logging probability) may
    share a request and a position, the only way a position can show two items.

    Counts distinct 64-bit hashes of (experiment, request_id, position) against
    the rows: a collision can only make the count smaller, which answers "maybe"
    and sends the caller to the exact grouping, so a "no" is always right. One
    hash per row costs a third of grouping by the three columns with a distinct
    count of items (measured at 10M rows)."""
    n_rows, n_keys = duck.execute(
        f"SELECT count(*), count(DISTINCT hash(experiment, request_id, position)) FROM {logged}"
    ).fetchone()
    return bool(n_keys < n_rows)
