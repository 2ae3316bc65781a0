"""The request checks of ingest (:mod:`abeval.store.ingest.requests`) against their
definitions, computed here in Python: on random impressions, the requests refused
and the column and reason named for each are those the definitions give, whichever
checks the pass over all impressions lets through to the grouping by request."""

from __future__ import annotations

import random
from collections import defaultdict

import duckdb
import pytest

from abeval.store.ingest.requests import TABLE, find_request_faults

COLUMNS = [
    "experiment",
    "arm",
    "request_id",
    "event_type",
    "item_id",
    "position",
    "propensity",
    "propensity_given_above",
    "team",
]
Row = tuple[str, str, str, str, str, int, float | None, float | None, str | None]
EXP, ARM, REQ, TYPE, ITEM, POS, P, GIVEN, TEAM = range(9)


def _expected(rows: list[Row], columns: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """(experiment, request) → (column, reason) of the first failed check, in the
    order: an interleaved experiment with several arms, a request without a team
    in it, one team on a list of several items, a team on some impressions, more
    than two teams, given-above on some, two items at the lowest crowded position."""
    by_request: dict[tuple[str, str], list[Row]] = defaultdict(list)
    arms: dict[str, set[str]] = defaultdict(set)
    with_teams: set[str] = set()
    named_requests: set[tuple[str, str]] = set()
    for row in rows:
        arms[row[EXP]].add(row[ARM])
        if row[TEAM] is not None:
            with_teams.add(row[EXP])
            named_requests.add((row[EXP], row[REQ]))
        if row[TYPE] == "impression":
            by_request[(row[EXP], row[REQ])].append(row)
    team_file = "team" in columns
    found = {}
    for exp, req in sorted(named_requests):
        if team_file and len(arms[exp]) > 1:
            names = ", ".join(sorted(arms[exp]))
            found[(exp, req)] = (
                "team",
                f"experiment '{exp}' is interleaved (request '{req}' names teams) but has "
                f"{len(arms[exp])} arms ({names}); every user of an interleaved experiment sees "
                "the merged list: give its rows one arm, and load an A/B test of the same "
                "rankers as an experiment of its own",
            )
    for (exp, req), imps in by_request.items():
        if (exp, req) in found:
            continue
        n = len(imps)
        teams = sorted({r[TEAM] for r in imps if r[TEAM] is not None})
        named = sum(r[TEAM] is not None for r in imps)
        given = sum(r[GIVEN] is not None for r in imps)
        crowded: dict[int, set[str]] = defaultdict(set)
        for r in imps:
            if r[P] is not None or r[GIVEN] is not None:
                crowded[r[POS]].add(r[ITEM])
        at = sorted(p for p, items in crowded.items() if len(items) > 1)
        if team_file and named == 0 and exp in with_teams:
            found[(exp, req)] = (
                "team",
                f"request '{req}' names no team, but experiment '{exp}' is interleaved (its "
                "other requests name teams); name the ranker of every impression",
            )
        elif team_file and named == n and len(teams) == 1 and len({r[ITEM] for r in imps}) > 1:
            found[(exp, req)] = (
                "team",
                f"request '{req}' names only {teams[0]} on its {n} impressions; team draft "
                "gives each of the two rankers a pick every round, so a list of two or more "
                "items names both",
            )
        elif team_file and 0 < named < n:
            found[(exp, req)] = (
                "team",
                f"request '{req}' names a team on {named} of its {n} impressions; an "
                "interleaved request names the ranker of every impression",
            )
        elif team_file and len(teams) > 2:
            found[(exp, req)] = (
                "team",
                f"request '{req}' names {len(teams)} teams ({', '.join(teams)}); an "
                "interleaved list merges exactly two rankers",
            )
        elif "propensity_given_above" in columns and 0 < given < n:
            found[(exp, req)] = (
                "propensity_given_above",
                f"request '{req}' has propensity_given_above on {given} of its {n} "
                "impressions; give it for every position of the request or for none",
            )
        elif at:
            found[(exp, req)] = (
                "position",
                f"request '{req}' shows {len(crowded[at[0]])} items at position {at[0]} with "
                "a logging probability; a logged list has one item per position",
            )
    return found


def _rows(rng: random.Random, faults: bool) -> list[Row]:
    """Impressions (and a few clicks) of a few requests; with ``faults``, each kind
    of fault may occur, else each request is a clean list (its own two teams, so
    that the file as a whole may name more than two)."""
    rows: list[Row] = []
    for e in range(2):
        # an interleaved experiment has one arm; with faults it may have two
        arms = ["x", "y"] if faults and rng.random() < 0.3 else ["x"]
        for q in range(rng.randint(1, 6)):
            arm = rng.choice(arms)
            k = rng.randint(1, 5)
            pair = rng.choice([("A", "B"), ("C", "D"), ("A", "C")])
            team_all, given_all = rng.random() < 0.5, rng.random() < 0.5
            logged = rng.random() < 0.7
            for pos in range(1, k + 1):
                item = f"i{rng.randint(1, 6) if faults else pos}"
                position = rng.randint(1, 3) if faults and rng.random() < 0.3 else pos
                team = rng.choice(pair) if team_all else None
                if faults and rng.random() < 0.15:
                    team = rng.choice(["A", "B", "C", None])
                given = 0.5 if given_all else None
                if faults and rng.random() < 0.15:
                    given = None if given else 0.5
                p = 0.4 if logged else None
                rows.append((f"e{e}", arm, f"r{q}", "impression", item, position, p, given, team))
            rows.append((f"e{e}", arm, f"r{q}", "click", "i1", 1, None, None, None))
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_the_faults_found_are_those_of_the_definitions(seed: int) -> None:
    rng = random.Random(seed)
    rows = _rows(rng, faults=seed % 3 != 0)
    columns = [c for c in COLUMNS if c != "team" or seed % 4 != 1]
    if seed % 5 == 2:
        columns.remove("propensity_given_above")
        rows = [(*r[:GIVEN], None, r[TEAM]) for r in rows]
    if "team" not in columns:
        rows = [(*r[:TEAM], None) for r in rows]
    duck = duckdb.connect()
    duck.execute(
        "CREATE TABLE t (experiment VARCHAR, arm VARCHAR, request_id VARCHAR, event_type VARCHAR, "
        "item_id VARCHAR, position INTEGER, propensity DOUBLE, "
        "propensity_given_above DOUBLE, team VARCHAR)"
    )
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    expected = _expected(rows, columns)
    assert find_request_faults(duck, "(SELECT * FROM t) n", columns) == len(expected)
    got = duck.execute(f"SELECT experiment, request_id, column_name, reason FROM {TABLE}")
    assert {(e, r): (c, why) for e, r, c, why in got.fetchall()} == expected


def test_clean_requests_of_four_teams_in_all_are_not_refused() -> None:
    """Two teams a request, four in the file: the pass over all impressions says
    "maybe", the grouping by request finds no fault."""
    duck = duckdb.connect()
    duck.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('e', 'x', 'r1', 'impression', 'i1', 1, 0.5, "
        "NULL, 'A'), ('e', 'x', 'r1', 'impression', 'i2', 2, 0.5, NULL, 'B'), ('e', 'x', 'r2', "
        "'impression', 'i1', 1, 0.5, NULL, 'C'), ('e', 'x', 'r2', 'impression', 'i2', 2, 0.5, "
        "NULL, 'D')) v(experiment, arm, request_id, event_type, item_id, position, propensity, "
        "propensity_given_above, team)"
    )
    assert find_request_faults(duck, "(SELECT * FROM t) n", COLUMNS) == 0


class _Spy:
    """A DuckDB connection that keeps the statements it runs."""

    def __init__(self) -> None:
        self.duck = duckdb.connect()
        self.statements: list[str] = []

    def execute(self, sql: str) -> duckdb.DuckDBPyConnection:
        self.statements.append(sql)
        return self.duck.execute(sql)


@pytest.mark.parametrize("team", [False, True])
def test_a_clean_file_is_not_grouped_by_request_for_checks_that_cannot_fail(team: bool) -> None:
    """A clean file without ``team`` reads its impressions once and groups nothing
    by request; a clean interleaved one groups only for the two team checks that
    the pass over the impressions cannot tell (one team on a list, several arms)."""
    spy = _Spy()
    spy.duck.execute(
        "CREATE TABLE t AS SELECT 'e' AS experiment, 'x' AS arm, 'r' || (i // 4) AS request_id, "
        "'impression' AS event_type, 'i' || i AS item_id, i % 4 + 1 AS position, 0.5 AS "
        "propensity, 0.5 AS propensity_given_above, "
        "CASE WHEN i % 2 = 0 THEN 'A' ELSE 'B' END AS team FROM range(40) r(i)"
    )
    columns = COLUMNS if team else [c for c in COLUMNS if c != "team"]
    assert find_request_faults(spy, "(SELECT * FROM t) n", columns) == 0
    grouped = [s for s in spy.statements if "GROUP BY experiment, request_id" in s]
    assert len(grouped) == (1 if team else 0)
    if team:
        assert " -3 AS k" in grouped[0] and " -5 AS k" in grouped[0]
        assert " -2 AS k" not in grouped[0] and " -4 AS k" not in grouped[0]
