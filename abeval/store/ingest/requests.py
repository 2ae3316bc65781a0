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
    one row each; return how many. Without a probability or ``team`` column in
    the file the table is empty and nothing is read.

    One pass over the impressions first (:func:`_may_break`) tells which checks
    can fail at all; only those group the impressions by request."""
    empty = (
        "SELECT CAST(NULL AS VARCHAR) AS experiment, CAST(NULL AS VARCHAR) AS request_id, "
        "CAST(NULL AS VARCHAR) AS column_name, CAST(NULL AS VARCHAR) AS reason WHERE false"
    )
    may = _may_break(duck, relation, columns) if may_fault(columns) else set()
    quoted = "'''' || request_id || ''''"
    parts = []
    if _GIVEN in may:
        parts.append(
            f"SELECT experiment, request_id, '{_GIVEN}' AS column_name, 'request ' || {quoted} "
            f"|| ' has {_GIVEN} on ' || count({_GIVEN}) || ' of its ' || count(*) || ' "
            "impressions; give it for every position of the request or for none' AS reason, "
            f"0 AS k FROM {relation} WHERE event_type = 'impression' GROUP BY experiment, "
            f"request_id HAVING count({_GIVEN}) > 0 AND count({_GIVEN}) < count(*)"
        )
    if _TEAM in columns:
        parts += _team_faults(relation, quoted, may)
    if _POSITION in may:
        parts.append(
            "SELECT experiment, request_id, 'position' AS column_name, 'request ' || "
            f"{quoted} || ' shows ' || count(DISTINCT item_id) || ' items at position ' || "
            "position || ' with a logging probability; a logged list has one item per "
            f"position' AS reason, position AS k FROM {_logged(relation)} "
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


_POSITION = "position"
_TEAM_MIXED = "team, not on every impression"
_TEAMS = "more than two teams"
_TEAM_NONE = "an impression without a team"


def _logged(relation: str) -> str:
    """The impressions of ``relation`` with a logging probability."""
    has_p = " OR ".join(f"{c} IS NOT NULL" for c in PROBABILITIES)
    return f"{relation} WHERE event_type = 'impression' AND ({has_p})"


def _may_break(duck: Any, relation: str, columns: list[str]) -> set[str]:
    """The checks that some request of ``relation`` may fail, from one pass over
    its impressions with no grouping by request; each "no" is certain:

    - a request can give ``propensity_given_above`` (or a ``team``) on some but
      not all of its impressions only if the impressions as a whole do, and can
      name no team only if some impression names none;
    - a request can name more than two teams only if the impressions do;
    - two logged impressions can share a request and a position only if the
      distinct 64-bit hashes of (experiment, request_id, position) of the logged
      impressions are fewer than they (a collision only makes the count smaller,
      which answers "maybe"; one hash a row costs a third of grouping by the
      three columns with a distinct count of items, measured at 10M rows)."""
    logged = " OR ".join(f"{c} IS NOT NULL" for c in PROBABILITIES)
    measures = ["count(*)"]
    if _GIVEN in columns:  # without the column no impression has it: none is mixed
        measures.append(f"count({_GIVEN})")
    if _TEAM in columns:
        measures += [f"count({_TEAM})", f"count(DISTINCT {_TEAM})"]
    if any(c in columns for c in PROBABILITIES):
        measures += [
            f"count(*) FILTER (WHERE {logged})",
            f"count(DISTINCT hash(experiment, request_id, position)) FILTER (WHERE {logged})",
        ]
    got = iter(
        duck.execute(
            f"SELECT {', '.join(measures)} FROM {relation} WHERE event_type = 'impression'"
        ).fetchone()
    )
    n = next(got)
    may = set()
    if _GIVEN in columns and 0 < next(got) < n:
        may.add(_GIVEN)
    if _TEAM in columns:
        named, teams = next(got), next(got)
        if 0 < named < n:
            may.add(_TEAM_MIXED)
        if named < n:
            may.add(_TEAM_NONE)
        if teams > 2:
            may.add(_TEAMS)
    if any(c in columns for c in PROBABILITIES):
        n_logged, n_keys = next(got), next(got)
        if n_keys < n_logged:
            may.add(_POSITION)
    return may


def _team_faults(relation: str, quoted: str, may: set[str]) -> list[str]:
    """The team checks over the impressions of ``relation`` (interleaving): those
    that ``may`` (:func:`_may_break`) says can fail, and those it cannot tell."""
    impressions = f"FROM {relation} WHERE event_type = 'impression' GROUP BY experiment, request_id"
    # (the check, the gate of _may_break that must let it through, or None: always run)
    checks: list[tuple[str | None, str]] = [
        (
            _TEAM_MIXED,
            f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
            f"|| ' names a team on ' || count({_TEAM}) || ' of its ' || count(*) || ' impressions; "
            "an interleaved request names the ranker of every impression' AS reason, "
            f"-2 AS k {impressions} HAVING count({_TEAM}) > 0 AND count({_TEAM}) < count(*)",
        ),
        (
            _TEAMS,
            f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
            f"|| ' names ' || count(DISTINCT {_TEAM}) || ' teams (' || "
            f"string_agg(DISTINCT {_TEAM}, ', ' ORDER BY {_TEAM}) || '); an interleaved list "
            f"merges exactly two rankers' AS reason, -1 AS k {impressions} "
            f"HAVING count(DISTINCT {_TEAM}) > 2",
        ),
        (
            None,
            f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
            f"|| ' names only ' || min({_TEAM}) || ' on its ' || count(*) || ' impressions; team "
            "draft gives each of the two rankers a pick every round, so a list of two or more "
            f"items names both' AS reason, -3 AS k {impressions} "
            f"HAVING count(DISTINCT {_TEAM}) = 1 AND count({_TEAM}) = count(*) "
            "AND count(DISTINCT item_id) > 1",
        ),
        (
            _TEAM_NONE,
            f"SELECT experiment, request_id, '{_TEAM}' AS column_name, 'request ' || {quoted} "
            f"|| ' names no team, but experiment ' || {_quoted('experiment')} || ' is "
            "interleaved (its other requests name teams); name the ranker of every impression' "
            f"AS reason, -4 AS k {impressions} HAVING count({_TEAM}) = 0 AND experiment IN "
            f"(SELECT experiment FROM {relation} WHERE {_TEAM} IS NOT NULL)",
        ),
        (
            None,
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
        ),
    ]
    return [sql for gate, sql in checks if gate is None or gate in may]


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
