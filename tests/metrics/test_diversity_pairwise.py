"""Diversity against its plain pairwise definition, computed here in numpy.

The kernel never builds a list's pairs for category or feature similarity (it sums
the list's unit vectors, docs/metrics.md#diversity-in-one-pass) and builds them only
against co-occurring item pairs for co-occurrence similarity; this test computes
every pair of every list the long way and compares per group to 1e-9, on DuckDB and
(category, co-occurrence) on PostgreSQL. The random lists have tied ranks, items
shown in many lists, single-item lists, items without a category or vector, zero
vectors and users with several lists.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pytest
from sqlalchemy import create_engine, text

from abeval.metrics import BeyondInputs, beyond_query, parse_offline_metrics

KS = (1, 3, 5)


@dataclass
class Data:
    ranked: list[tuple[str, str, str, str, int, float]]  # grp, user, list, item, rank, gain
    category: dict[str, str | None]  # items file with categories (None = no category)
    features: dict[str, list[float] | None]  # items file with vectors (None = no vector)
    interactions: list[tuple[str, str]]  # distinct (user, item)


def random_data(seed: int) -> Data:
    rng = np.random.default_rng(seed)
    items = [f"i{n:02d}" for n in range(25)]
    ranked = []
    for g in ("A", "B"):
        for u in range(int(rng.integers(6, 12))):
            for n_list in range(int(rng.integers(1, 4))):
                size = int(rng.choice([1, 1, 2, 3, 6, 9]))
                shown = rng.choice(items, size=size, replace=False)
                ranks = np.sort(rng.integers(1, size + 2, size=size))  # ties, gaps
                for item, rank in zip(shown, ranks, strict=True):
                    lid = f"{g}{u}-{n_list}"
                    ranked.append((g, f"u{u}", lid, str(item), int(rank), 0.0))
    category: dict[str, str | None] = {}
    features: dict[str, list[float] | None] = {}
    for item in items[:-3]:  # the last three items are in no items file
        category[item] = None if rng.random() < 0.15 else str(rng.choice(["x", "y", "z"]))
        roll = rng.random()
        if roll < 0.1:
            features[item] = None
        elif roll < 0.2:
            features[item] = [0.0, 0.0, 0.0]
        else:
            features[item] = [float(v) for v in rng.integers(-3, 4, size=3)]
    users = [f"h{n}" for n in range(30)]
    interactions = sorted(
        {(str(rng.choice(users)), str(rng.choice(items[:-2]))) for _ in range(120)}
    )
    return Data(ranked, category, features, interactions)


def pair_similarity(data: Data, similarity: str) -> Any:
    """sim(i, j) for two distinct items, by its definition (docs/metrics.md#diversity)."""
    users: dict[str, set[str]] = defaultdict(set)
    for u, i in data.interactions:
        users[i].add(u)

    def sim(a: str, b: str) -> float:
        if similarity == "category":
            ca, cb = data.category.get(a), data.category.get(b)
            return 1.0 if ca is not None and ca == cb else 0.0
        if similarity == "features":
            va, vb = data.features.get(a), data.features.get(b)
            if va is None or vb is None:
                return 0.0
            x, y = np.array(va), np.array(vb)
            norms = np.linalg.norm(x) * np.linalg.norm(y)
            return 0.0 if norms == 0 else float(x @ y / norms)
        ua, ub = users[a], users[b]
        return len(ua & ub) / np.sqrt(len(ua) * len(ub)) if ua and ub else 0.0

    return sim


def expected(data: Data, similarity: str, k: int) -> dict[str, dict[str, float | int | None]]:
    """Per group: value, users n, Σ and centred Σ² of the per-user means, lists, left out."""
    sim = pair_similarity(data, similarity)
    lists: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for g, u, lid, item, rank, _ in data.ranked:
        if rank <= k:
            lists[(g, u, lid)].append(item)
    per_user: dict[tuple[str, str], list[float]] = defaultdict(list)
    small: dict[str, int] = defaultdict(int)
    for (g, u, _), top in lists.items():
        if len(top) < 2:
            small[g] += 1
            continue
        pairs = [sim(a, b) for a, b in itertools.combinations(top, 2)]
        per_user[(g, u)].append(1 - float(np.mean(pairs)))
    out: dict[str, dict[str, float | int | None]] = {}
    for g in sorted({g for g, *_ in lists}):
        means = np.array([np.mean(v) for (gg, _), v in per_user.items() if gg == g])
        counted = sum(len(v) for (gg, _), v in per_user.items() if gg == g)
        out[g] = {
            "value": float(means.mean()) if len(means) else None,
            "n": len(means),
            "s": float(means.sum()),
            "ss": float(((means - means.mean()) ** 2).sum()) if len(means) else 0.0,
            "counted": counted,
            "left_out": small[g],
        }
    return out


def kernel_rows(
    run: Any, similarity: str, list_key: tuple[str, ...] = ("grp", "list_id")
) -> dict[tuple[int, str], dict[str, Any]]:
    specs = parse_offline_metrics([f"diversity@{k}" for k in KS])
    items = None if similarity == "cooccurrence" else "items"
    inputs = BeyondInputs(items=items, similarity=similarity, list_key=list_key)
    query = beyond_query(specs, inputs)
    return {(int(r["metric_index"]), str(r["grp"])): r for r in run(query.sql())}


def check(rows: dict[tuple[int, str], dict[str, Any]], data: Data, similarity: str) -> None:
    for index, k in enumerate(KS):
        for grp, want in expected(data, similarity, k).items():
            got = rows[(index, grp)]
            where = f"{similarity} diversity@{k} group {grp}"
            assert (int(got["counted"]), int(got["left_out"]), int(got["n"])) == (
                want["counted"],
                want["left_out"],
                want["n"],
            ), where
            if want["value"] is None:
                assert got["value"] is None, where
                continue
            assert float(got["value"]) == pytest.approx(want["value"], abs=1e-9), where
            assert float(got["s"]) == pytest.approx(want["s"], abs=1e-9), where
            assert float(got["ss"]) == pytest.approx(want["ss"], abs=1e-9), where


def load_duckdb(data: Data, similarity: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE ranked (grp VARCHAR, user_id VARCHAR, list_id VARCHAR, item_id VARCHAR, "
        "rank BIGINT, gain DOUBLE)"
    )
    con.executemany("INSERT INTO ranked VALUES (?, ?, ?, ?, ?, ?)", data.ranked)
    con.execute("CREATE TABLE interactions (user_id VARCHAR, item_id VARCHAR)")
    if data.interactions:
        con.executemany("INSERT INTO interactions VALUES (?, ?)", data.interactions)
    if similarity == "category":
        con.execute("CREATE TABLE items (item_id VARCHAR, category VARCHAR)")
        con.executemany("INSERT INTO items VALUES (?, ?)", list(data.category.items()))
    elif similarity == "features":
        con.execute("CREATE TABLE items (item_id VARCHAR, features DOUBLE[])")
        con.executemany("INSERT INTO items VALUES (?, ?)", list(data.features.items()))
    return con


def duckdb_runner(con: duckdb.DuckDBPyConnection) -> Any:
    cursor = con.cursor()

    def run(sql: str) -> list[dict[str, Any]]:
        result = cursor.execute(sql)
        names = [d[0] for d in result.description]
        return [dict(zip(names, row, strict=True)) for row in result.fetchall()]

    return run


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("similarity", ["category", "features", "cooccurrence"])
def test_diversity_equals_pairwise_definition_on_duckdb(similarity: str, seed: int) -> None:
    data = random_data(seed)
    run = duckdb_runner(load_duckdb(data, similarity))
    check(kernel_rows(run, similarity), data, similarity)
    # the lists' ids here are never in two groups, as the replay's: keyed by the id alone
    check(kernel_rows(run, similarity, ("list_id",)), data, similarity)


@pytest.mark.parametrize("similarity", ["category", "features", "cooccurrence"])
def test_the_same_list_id_in_two_groups_is_two_lists(similarity: str) -> None:
    """As in ``evaluate``, where a list's id is its user's in every model's group: the
    default key (group, list) keeps the groups' lists apart."""
    data = random_data(4)
    data.ranked = [(g, u, lid[1:], i, r, x) for g, u, lid, i, r, x in data.ranked]
    assert {r[2] for r in data.ranked if r[0] == "A"} & {r[2] for r in data.ranked if r[0] == "B"}
    check(kernel_rows(duckdb_runner(load_duckdb(data, similarity)), similarity), data, similarity)


def test_zero_vectors_and_missing_items_have_similarity_zero() -> None:
    """A list of a zero vector, an item without a vector and two equal vectors: of
    its three pairs only the equal vectors are similar (1), so diversity is 2/3."""
    data = Data(
        ranked=[("A", "u", "l", i, r, 0.0) for r, i in enumerate(["z", "n", "a", "b"], 1)],
        category={},
        features={"z": [0.0, 0.0], "n": None, "a": [1.0, 2.0], "b": [2.0, 4.0]},
        interactions=[],
    )
    con = load_duckdb(data, "features")
    specs = parse_offline_metrics(["diversity@4"])
    query = beyond_query(specs, BeyondInputs(items="items", similarity="features"))
    value = con.execute(f"SELECT value FROM ({query.sql()}) q").fetchone()
    assert value is not None and value[0] == pytest.approx(1 - 1 / 6, abs=1e-12)


@pytest.mark.postgres
@pytest.mark.parametrize("similarity", ["category", "cooccurrence"])
def test_diversity_equals_pairwise_definition_on_postgres(
    similarity: str, postgres_database: str
) -> None:
    data = random_data(4)
    engine = create_engine(postgres_database)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "CREATE TABLE ranked (grp TEXT, user_id TEXT, list_id TEXT, item_id TEXT, "
                    "rank BIGINT, gain DOUBLE PRECISION)"
                )
            )
            conn.execute(
                text("INSERT INTO ranked VALUES (:g, :u, :l, :i, :r, :gain)"),
                [dict(zip(("g", "u", "l", "i", "r", "gain"), r, strict=True)) for r in data.ranked],
            )
            conn.execute(text("CREATE TABLE interactions (user_id TEXT, item_id TEXT)"))
            conn.execute(
                text("INSERT INTO interactions VALUES (:u, :i)"),
                [{"u": u, "i": i} for u, i in data.interactions],
            )
            conn.execute(text("CREATE TABLE items (item_id TEXT, category TEXT)"))
            conn.execute(
                text("INSERT INTO items VALUES (:i, :c)"),
                [{"i": i, "c": c} for i, c in data.category.items()],
            )
        with engine.connect() as conn:
            rows = kernel_rows(
                lambda sql: [dict(r._mapping) for r in conn.execute(text(sql))], similarity
            )
        check(rows, data, similarity)
    finally:
        engine.dispose()
