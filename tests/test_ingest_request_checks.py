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
    "request_id",
    "event_type",
    "item_id",
    "position",
    "propensity",
    "propensity_given_above",
    "team",
]
Row = tuple[str, str, str, str, int, float | None, float | None, str | None]


def _expected(rows: list[Row], columns: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """(experiment, request) → (column, reason) of the first failed check, in the
    order team on some impressions, more than two teams, given-above on some,
    two items at the lowest crowded position."""
    by_request: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row[2] == "impression":
            by_request[(row[0], row[1])].append(row)
    found = {}
    for (exp, req), imps in by_request.items():
        n = len(imps)
        teams = sorted({r[7] for r in imps if r[7] is not None})
        named = sum(r[7] is not None for r in imps)
        given = sum(r[6] is not None for r in imps)
        crowded: dict[int, set[str]] = defaultdict(set)
        for r in imps:
            if r[5] is not None or r[6] is not None:
                crowded[r[4]].add(r[3])
        at = sorted(p for p, items in crowded.items() if len(items) > 1)
        if "team" in columns and 0 < named < n:
            found[(exp, req)] = (
                "team",
                f"request '{req}' names a team on {named} of its {n} impressions; an "
                "interleaved request names the ranker of every impression",
            )
        elif "team" in columns and len(teams) > 2:
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
        for q in range(rng.randint(1, 6)):
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
                rows.append((f"e{e}", f"r{q}", "impression", item, position, p, given, team))
            rows.append((f"e{e}", f"r{q}", "click", "i1", 1, None, None, None))
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_the_faults_found_are_those_of_the_definitions(seed: int) -> None:
    rng = random.Random(seed)
    rows = _rows(rng, faults=seed % 3 != 0)
    columns = [c for c in COLUMNS if c != "team" or seed % 4 != 1]
    if seed % 5 == 2:
        columns.remove("propensity_given_above")
        rows = [(*r[:6], None, r[7]) for r in rows]
    if "team" not in columns:
        rows = [(*r[:7], None) for r in rows]
    duck = duckdb.connect()
    duck.execute(
        "CREATE TABLE t (experiment VARCHAR, request_id VARCHAR, event_type VARCHAR, "
        "item_id VARCHAR, position INTEGER, propensity DOUBLE, "
        "propensity_given_above DOUBLE, team VARCHAR)"
    )
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    expected = _expected(rows, columns)
    assert find_request_faults(duck, "(SELECT * FROM t) n", columns) == len(expected)
    got = duck.execute(f"SELECT experiment, request_id, column_name, reason FROM {TABLE}")
    assert {(e, r): (c, why) for e, r, c, why in got.fetchall()} == expected


def test_clean_requests_of_four_teams_in_all_are_not_refused() -> None:
    """Two teams a request, four in the file: the pass over all impressions says
    "maybe", the grouping by request finds no fault."""
    duck = duckdb.connect()
    duck.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('e', 'r1', 'impression', 'i1', 1, 0.5, "
        "NULL, 'A'), ('e', 'r1', 'impression', 'i2', 2, 0.5, NULL, 'B'), ('e', 'r2', "
        "'impression', 'i1', 1, 0.5, NULL, 'C'), ('e', 'r2', 'impression', 'i2', 2, 0.5, "
        "NULL, 'D')) v(experiment, request_id, event_type, item_id, position, propensity, "
        "propensity_given_above, team)"
    )
    assert find_request_faults(duck, "(SELECT * FROM t) n", COLUMNS) == 0
