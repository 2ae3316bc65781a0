"""The lists ranked by numpy (``abeval.analysis.evaluate.columnar``) against SQL and Python.

A recommendations file without repeated items is ranked by numpy over matrices of
lists; with repeats (``duplicates=dedupe``) SQL ranks it. Here the same files go
through both (the numpy path switched off by dropping the lists ``load_inputs``
holds) and must give every user the same value of every metric to 1e-9, and the
ranks a plain sort in Python gives: ties by item id descending in byte order
(upper case before lower case, ``é`` after ``z``), NaN above every number, ``-0.0``
equal to ``0.0``, lists from 1 to 40 items (several matrices), users whose rows are
not together, Parquet files read directly (several row groups, integer scores,
dictionary columns, a rank column) and CSV files, two models of which one repeats
items, AUC (every item) and whole-list AP.
"""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from metrics_helpers import assert_same_values, write_csv

import abeval.analysis.evaluate.run as run_module
from abeval.analysis.evaluate import evaluate
from abeval.analysis.evaluate.columnar import Lists, TruthColumns
from abeval.analysis.evaluate.inputs import Inputs
from abeval.metrics import Conventions

KS = (1, 3, 10)
CUT = [f"{m}@{k}" for k in KS for m in ("precision", "recall", "ap", "ndcg", "hit_rate")]
SETS = {
    "cutoffs_mrr": [*CUT, "mrr"],
    "whole_list": [*CUT, "mrr", "ap", "ndcg"],
    "auc": [*CUT, "mrr", "auc"],
}
ITEMS = [f"i{n}" for n in range(60)] + ["x", "X", "Z", "z", "é", "e", "i", "I10"]
KEYS = [0.0, -0.0, 0.5, 0.5, 1.0, 2.0, -1.0, 3.0, math.nan, math.inf, -math.inf]

Rows = list[tuple[str, str, float]]


def random_lists(seed: int, users: int = 80) -> tuple[Rows, dict[str, dict[str, int]]]:
    """(user, item, key) rows without repeated items, shuffled unless ``seed`` is
    even, and graded truth (some users without relevant items or without a list)."""
    rng = random.Random(seed)
    rows: Rows = []
    truth: dict[str, dict[str, int]] = {}
    for u in range(users):
        user = f"u{u}"
        listed: list[str] = []
        if rng.random() > 0.1:
            listed = rng.sample(ITEMS, rng.choice([1, 2, 3, 4, 7, 9, 12, 17, 30, 40]))
            rows += [(user, it, rng.choice(KEYS)) for it in listed]
        if rng.random() < 0.9:
            judged = set(rng.sample(ITEMS, 3)) | set(rng.sample(listed, min(4, len(listed))))
            grades = [0] if rng.random() < 0.15 else [0, 1, 1, 2, 3]
            truth[user] = {it: rng.choice(grades) for it in sorted(judged)}
    if seed % 2:
        rng.shuffle(rows)
    return rows, truth


def write_truth(tmp_path: Path, truth: dict[str, dict[str, int]]) -> Path:
    return write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [(u, it, g) for u, docs in truth.items() for it, g in docs.items()],
    )


def write_parquet(path: Path, rows: Rows, *, row_group: int = 50, **columns: object) -> Path:
    table = pa.table(
        {
            "user_id": [r[0] for r in rows],
            "item_id": pa.array([r[1] for r in rows]).dictionary_encode(),
            "score": [r[2] for r in rows],
            **columns,
        }
    )
    pq.write_table(table, path, row_group_size=row_group)
    return path


def per_user(
    tmp_path: Path, truth: Path, recs: dict[str, Path], metrics: list[str], **options: object
) -> dict[tuple[str, str], dict[str, float | None]]:
    out = tmp_path / "per_user.csv"
    evaluate(truth, recs, metrics=metrics, per_user=out, **options)  # type: ignore[arg-type]
    cur = duckdb.connect().execute("SELECT * FROM read_csv(?, header = true)", [str(out)])
    cols = [d[0] for d in cur.description or []]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    return {(str(r["model"]), str(r["user_id"])): {m: r[m] for m in metrics} for r in rows}


def by_sql(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let SQL rank every file: ``load_inputs`` keeps no lists."""
    load = run_module.load_inputs

    def without_lists(*args: object, **kwargs: object) -> Inputs:
        return dataclasses.replace(load(*args, **kwargs), lists=())  # type: ignore[arg-type]

    monkeypatch.setattr(run_module, "load_inputs", without_lists)


def both_paths(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    truth: Path,
    recs: dict[str, Path],
    metrics: list[str],
    **options: object,
) -> dict[tuple[str, str], dict[str, float | None]]:
    """The numpy path's values, asserted equal to SQL's."""
    ranked: list[int] = []
    original = Lists.ranked

    def spy(self: Lists, truth: TruthColumns, grp: int, top_k: int | None) -> pa.Table:
        ranked.append(grp)
        return original(self, truth, grp, top_k)

    with monkeypatch.context() as m:
        m.setattr(Lists, "ranked", spy)
        numpy = per_user(tmp_path, truth, recs, metrics, **options)
    assert ranked, "numpy ranked no list"
    with monkeypatch.context() as m:
        by_sql(m)
        sql = per_user(tmp_path, truth, recs, metrics, **options)
    assert_same_values(numpy, sql)
    return numpy


def _order(key: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(key) else (0, key + 0.0)


def python_ranks(rows: Rows) -> dict[str, list[str]]:
    """Each user's items by key descending (NaN first), then item id descending in
    UTF-8 byte order."""
    lists: dict[str, list[tuple[str, float]]] = {}
    for user, item, key in rows:
        lists.setdefault(user, []).append((item, key))
    return {
        user: [
            it
            for it, _ in sorted(
                items, key=lambda r: (_order(r[1]), r[0].encode("utf-8")), reverse=True
            )
        ]
        for user, items in lists.items()
    }


def assert_python_ranks(
    values: dict[tuple[str, str], dict[str, float | None]],
    rows: Rows,
    truth: dict[str, dict[str, int]],
    model: str = "m",
) -> None:
    """MRR and precision@3 of every evaluated user against a plain sort in Python."""
    checked = 0
    for user, ranked in python_ranks(rows).items():
        relevant = {it for it, g in truth.get(user, {}).items() if g > 0}
        if not relevant:
            continue
        first = next((r for r, it in enumerate(ranked, 1) if it in relevant), None)
        got = values[(model, user)]
        assert got["mrr"] == pytest.approx(0.0 if first is None else 1 / first, abs=1e-12)
        hits = sum(1 for it in ranked[:3] if it in relevant)
        assert got["precision@3"] == pytest.approx(hits / 3, abs=1e-12)
        checked += 1
    assert checked > 20


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", sorted(SETS))
def test_csv_numpy_equals_sql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, kind: str
) -> None:
    rows, truth = random_lists(seed)
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,score", rows)
    values = both_paths(
        tmp_path, monkeypatch, write_truth(tmp_path, truth), {"m": recs}, SETS[kind]
    )
    assert_python_ranks(values, rows, truth)


@pytest.mark.parametrize("seed", [5, 6])
def test_parquet_read_directly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Row groups of 50 rows, each with its own dictionary of item ids; users
    scattered over them when the seed is odd."""
    rows, truth = random_lists(seed)
    recs = write_parquet(tmp_path / "recs.parquet", rows)
    values = both_paths(
        tmp_path, monkeypatch, write_truth(tmp_path, truth), {"m": recs}, SETS["whole_list"]
    )
    assert_python_ranks(values, rows, truth)


def test_parquet_integer_scores_and_rank_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, truth = random_lists(7)
    whole = [(u, it, float(n % 5)) for n, (u, it, _) in enumerate(rows)]
    truth_path = write_truth(tmp_path, truth)
    ints = tmp_path / "ints.parquet"
    pq.write_table(
        pa.table(
            {
                "user_id": [r[0] for r in whole],
                "item_id": [r[1] for r in whole],
                "score": pa.array([int(r[2]) for r in whole], pa.int16()),
            }
        ),
        ints,
    )
    values = both_paths(tmp_path, monkeypatch, truth_path, {"m": ints}, SETS["cutoffs_mrr"])
    assert_python_ranks(values, whole, truth)
    ranked = tmp_path / "ranked.parquet"
    pq.write_table(
        pa.table(
            {
                "USER_ID": [r[0] for r in whole],
                "item_id": [r[1] for r in whole],
                "rank": pa.array([int(5 - r[2]) for r in whole], pa.uint8()),
            }
        ),
        ranked,
    )
    values = both_paths(tmp_path, monkeypatch, truth_path, {"m": ranked}, SETS["cutoffs_mrr"])
    assert_python_ranks(values, whole, truth)


def test_two_models_one_repeating_missing_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Model a (Parquet) is ranked by numpy, model b repeats an item and is ranked
    by SQL; truth users without a list score 0."""
    rows, truth = random_lists(8)
    other, _ = random_lists(9)
    other.append((*other[0][:2], -math.inf))  # a repeated item, kept at its best key
    a = write_parquet(tmp_path / "a.parquet", rows)
    b = write_csv(tmp_path / "b.csv", "user_id,item_id,score", other)
    options = {"conventions": Conventions(duplicates="dedupe", empty="zero"), "missing": "zero"}
    values = both_paths(
        tmp_path,
        monkeypatch,
        write_truth(tmp_path, truth),
        {"a": a, "b": b},
        SETS["cutoffs_mrr"],
        **options,
    )
    assert {m for m, _ in values} == {"a", "b"}
    assert_python_ranks(values, rows, truth, "a")
    assert_python_ranks(values, other[:-1], truth, "b")


def test_user_and_item_ids_of_other_types_in_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Integer ids are not read directly (DuckDB casts them to text first); the
    values are the same and 10 ranks below 9 (text order)."""
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [(1, 9), (2, 10)])
    recs = tmp_path / "recs.parquet"
    pq.write_table(
        pa.table({"user_id": [1, 1, 2, 2], "item_id": [9, 10, 9, 10], "score": [1.0] * 4}),
        recs,
    )
    values = both_paths(tmp_path, monkeypatch, truth, {"m": recs}, ["mrr"])
    assert values[("m", "1")]["mrr"] == 1.0
    assert values[("m", "2")]["mrr"] == 0.5
