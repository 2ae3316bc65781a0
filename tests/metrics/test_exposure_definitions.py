"""Coverage, Gini, entropy and novelty at several cutoffs against their definitions,
computed here slot by slot in numpy.

The kernel counts each item's top-K slots once per group for every cutoff (one
grouping of the lists by item, docs/metrics.md#diversity-in-one-pass) and computes
each metric from those counts; this test recomputes every metric from the list of
slots itself and compares per group, on DuckDB and PostgreSQL. The random lists
(test_diversity_pairwise.random_data) have tied ranks and gaps, items shown in
many lists, shown items outside the catalogue and items without a popularity.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import duckdb
import numpy as np
import pytest
from sqlalchemy import create_engine, text
from test_diversity_pairwise import Data, random_data

from abeval.metrics import BeyondInputs, beyond_query, parse_offline_metrics

KS = (1, 3, 5)
NAMES = ("coverage", "gini", "entropy", "novelty")
REFERENCE_USERS = 30


def references(data: Data) -> tuple[list[str], dict[str, float]]:
    """A catalogue that leaves out five shown items, and a popularity for some items
    (one of them 0, which counts as no popularity)."""
    items = sorted({r[3] for r in data.ranked})
    catalogue = items[5:]
    rng = np.random.default_rng(len(items))
    popularity = {i: float(rng.integers(0, 10)) / REFERENCE_USERS for i in items[::2]}
    return catalogue, popularity


def expected(data: Data, name: str, k: int) -> dict[str, tuple[float | None, int, int, int]]:
    """Per group with a top-K slot: (value, counted, left_out, extra) by the definitions."""
    catalogue, popularity = references(data)
    out: dict[str, tuple[float | None, int, int, int]] = {}
    for g in sorted({r[0] for r in data.ranked}):
        slots = [r[3] for r in data.ranked if r[0] == g and r[4] <= k]
        if not slots:
            continue
        counts = Counter(slots)
        inside = [i for i in counts if i in catalogue]
        outside = len(counts) - len(inside)
        if name == "coverage":
            out[g] = (len(inside) / len(catalogue), len(inside), outside, len(catalogue))
        elif name == "gini":
            x = np.sort([counts.get(i, 0) for i in catalogue]).astype(float)
            n = len(x)
            num = float(((2 * np.arange(1, n + 1) - n - 1) * x).sum())
            value = num / (n * x.sum()) if x.sum() > 0 else None
            out[g] = (value, n, outside, int(x.sum()))
        elif name == "entropy":
            p = np.array(list(counts.values()), dtype=float) / len(slots)
            out[g] = (float(-(p * np.log2(p)).sum()), len(slots), 0, len(counts))
        else:
            smoothed = 1 / (REFERENCE_USERS + 1)
            shares = [popularity.get(i) or smoothed for i in slots]
            missing = sum(1 for i in slots if not popularity.get(i))
            out[g] = (float(np.mean([-math.log2(s) for s in shares])), missing, 0, len(slots))
    return out


def check(run: Any, data: Data) -> None:
    specs = parse_offline_metrics([f"{name}@{k}" for name in NAMES for k in KS])
    inputs = BeyondInputs(reference_users=REFERENCE_USERS)
    query = beyond_query(specs, inputs)
    rows = {(int(r["metric_index"]), str(r["grp"])): r for r in run(query.sql())}
    for index, spec in enumerate(specs):
        want = expected(data, spec.name, int(spec.k or 0))
        got = {g: r for (i, g), r in rows.items() if i == index}
        assert sorted(got) == sorted(want), spec.label
        for g, (value, counted, left_out, extra) in want.items():
            r, where = got[g], f"{spec.label} group {g}"
            assert (int(r["counted"]), int(r["left_out"]), int(r["extra"])) == (
                counted,
                left_out,
                extra,
            ), where
            if value is None:
                assert r["value"] is None, where
            else:
                assert float(r["value"]) == pytest.approx(value, abs=1e-12), where


def tables(data: Data) -> dict[str, list[tuple[Any, ...]]]:
    catalogue, popularity = references(data)
    return {
        "ranked": data.ranked,
        "catalogue": [(i,) for i in catalogue],
        "popularity": list(popularity.items()),
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exposure_metrics_equal_their_definitions_on_duckdb(seed: int) -> None:
    data = random_data(seed)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE ranked (grp VARCHAR, user_id VARCHAR, list_id VARCHAR, item_id VARCHAR, "
        "rank BIGINT, gain DOUBLE)"
    )
    con.execute("CREATE TABLE catalogue (item_id VARCHAR)")
    con.execute("CREATE TABLE popularity (item_id VARCHAR, share DOUBLE)")
    for name, rows in tables(data).items():
        marks = ", ".join("?" * len(rows[0]))
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)

    def run(sql: str) -> list[dict[str, Any]]:
        result = con.execute(sql)
        names = [d[0] for d in result.description]
        return [dict(zip(names, row, strict=True)) for row in result.fetchall()]

    check(run, data)


@pytest.mark.postgres
def test_exposure_metrics_equal_their_definitions_on_postgres(postgres_database: str) -> None:
    data = random_data(4)
    engine = create_engine(postgres_database)
    columns = {
        "ranked": "grp TEXT, user_id TEXT, list_id TEXT, item_id TEXT, rank BIGINT, "
        "gain DOUBLE PRECISION",
        "catalogue": "item_id TEXT",
        "popularity": "item_id TEXT, share DOUBLE PRECISION",
    }
    try:
        with engine.begin() as conn:
            for name, rows in tables(data).items():
                conn.execute(text(f"CREATE TABLE {name} ({columns[name]})"))
                marks = ", ".join(f":c{i}" for i in range(len(rows[0])))
                conn.execute(
                    text(f"INSERT INTO {name} VALUES ({marks})"),
                    [{f"c{i}": v for i, v in enumerate(r)} for r in rows],
                )
        with engine.connect() as conn:
            check(lambda sql: [dict(r._mapping) for r in conn.execute(text(sql))], data)
    finally:
        engine.dispose()


def test_the_exposure_metrics_are_one_aggregate_and_each_relation_one_branch() -> None:
    """Every metric of exposure at every cutoff from one aggregate by group, and
    one UNION ALL branch per relation (exposure, diversity, serendipity), so an
    engine that does not keep a CTE (Spark) computes each once."""
    names = [*NAMES, "diversity", "serendipity"]
    specs = parse_offline_metrics([f"{n}@{k}" for k in KS for n in names])
    inputs = BeyondInputs(reference_users=REFERENCE_USERS, history="history")
    query = beyond_query(specs, inputs)
    assert query.select.count("\nUNION ALL\n") == 2 + len(KS) - 1
    assert query.ctes.count("GROUP BY grp)") == 2 + 2 * len(KS)  # serendipity: 2 per cutoff
    assert query.ctes.count("FROM bx_exposure GROUP BY grp)") == 1
    assert query.ctes.count("FROM ranked WHERE rank <= 5 GROUP BY grp, item_id)") == 1
