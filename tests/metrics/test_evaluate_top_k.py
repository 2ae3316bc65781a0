"""The top-K path of ``abeval evaluate`` against the whole-list path and a Python ranking.

Cutoff metrics and MRR take the top K of each list from the K-th best key and a
window over the rows at or above it, and rank the first relevant item beyond K
by counting the items that beat it (``abeval.analysis.evaluate.tables``). Asking
for whole-list AP as well makes evaluate rank every item with one window instead.
Both must give every user the same values (to 1e-9), and the ranks must be the
ones a plain sort in Python gives (key descending, item id descending; a repeated
item at its best position), on lists built to break a careless top K: ties at the
K-th key, lists shorter than K, repeated items, users whose truth has no relevant
item, users in the truth file only or in the recommendations only, NaN and
infinite scores, rank columns, and two models.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import duckdb
import pytest
from metrics_helpers import write_csv

from abeval.analysis.evaluate import evaluate
from abeval.cli.app import option_name
from abeval.errors import InputError
from abeval.metrics import Conventions

KS = (1, 3, 5)
TOP_K = [f"{m}@{k}" for k in KS for m in ("precision", "recall", "ap", "ndcg", "hit_rate")]
FAST = [*TOP_K, "mrr"]
WHOLE = [*FAST, "ap"]  # whole-list AP: every item is ranked by one window
DEDUPE = Conventions(duplicates="dedupe")

Run = dict[str, list[tuple[str, float]]]  # user -> (item, key) rows, repeats allowed
Qrel = dict[str, dict[str, int]]


def random_case(seed: int, n_users: int = 50) -> tuple[Run, Qrel]:
    rng = random.Random(seed)
    pool = [f"i{n}" for n in range(30)] + ["x", "X", "i"]
    keys = [0.0, 0.5, 0.5, 1.0, 1.0, 2.0, -1.0]
    run: Run = {}
    qrel: Qrel = {}
    for u in range(n_users):
        user = f"u{u}"
        kind = rng.random()
        if kind > 0.1:  # 10 % have truth only
            items = rng.sample(pool, rng.choice([1, 2, 3, 4, 5, 6, 9, 15, 25]))
            rows = [(it, rng.choice(keys)) for it in items]
            if rng.random() < 0.3:  # an item repeated at another key
                rows.append((rng.choice(items), rng.choice(keys)))
            if rng.random() < 0.1:
                rows.append((rng.choice(pool), rng.choice([math.nan, math.inf, -math.inf])))
            run[user] = rows
        if kind < 0.9:  # 10 % have recommendations only
            listed = [it for it, _ in run.get(user, [])]
            judged = rng.sample(pool, 3) + rng.sample(listed, min(len(listed), rng.randint(0, 3)))
            grades = [0] if rng.random() < 0.15 else [0, 1, 1, 2, 3]
            qrel[user] = {it: rng.choice(grades) for it in judged}
    return run, qrel


def write_case(tmp_path: Path, run: Run, qrel: Qrel, name: str = "recs") -> tuple[Path, Path]:
    recs = write_csv(
        tmp_path / f"{name}.csv",
        "user_id,item_id,score",
        [(u, it, key) for u, rows in run.items() for it, key in rows],
    )
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [(u, it, g) for u, docs in qrel.items() for it, g in docs.items()],
    )
    return recs, truth


def per_user(
    tmp_path: Path, truth: Path, recs: dict[str, Path], metrics: list[str], **options: object
) -> dict[tuple[str, str], dict[str, float | None]]:
    """(model, user) -> {metric: value} from evaluate's ``--per-user`` file."""
    out = tmp_path / f"per_user_{len(metrics)}.csv"
    evaluate(truth, recs, metrics=metrics, per_user=out, **options)  # type: ignore[arg-type]
    cur = duckdb.connect().execute("SELECT * FROM read_csv(?, header = true)", [str(out)])
    cols = [d[0] for d in cur.description or []]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    return {(str(r["model"]), str(r["user_id"])): {m: r[m] for m in FAST} for r in rows}


def assert_same(
    fast: dict[tuple[str, str], dict[str, float | None]],
    whole: dict[tuple[str, str], dict[str, float | None]],
) -> None:
    assert set(fast) == set(whole)
    for key, values in whole.items():
        for metric, value in values.items():
            got = fast[key][metric]
            if value is None:
                assert got is None, (key, metric)
            else:
                assert got == pytest.approx(value, abs=1e-9), (key, metric)


def _rank_key(key: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(key) else (0, key)


def expected_mrr_and_precision(run: Run, qrel: Qrel, k: int) -> dict[str, tuple[float, float]]:
    """Per evaluated user with a relevant item: (reciprocal rank, precision@k) from a
    plain sort in Python."""
    out: dict[str, tuple[float, float]] = {}
    for user, rows in run.items():
        relevant = {it for it, g in qrel.get(user, {}).items() if g > 0}
        if not relevant:
            continue
        best: dict[str, float] = {}
        for item, key in rows:
            if item not in best or _rank_key(key) > _rank_key(best[item]):
                best[item] = key
        ranked = sorted(best, key=lambda it: (_rank_key(best[it]), it), reverse=True)
        first = next((r for r, it in enumerate(ranked, 1) if it in relevant), None)
        hits = sum(1 for it in ranked[:k] if it in relevant)
        out[user] = (0.0 if first is None else 1 / first, hits / k)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_top_k_path_equals_whole_list_path(tmp_path: Path, seed: int) -> None:
    run, qrel = random_case(seed)
    recs, truth = write_case(tmp_path, run, qrel)
    fast = per_user(tmp_path, truth, {"m": recs}, FAST, conventions=DEDUPE)
    whole = per_user(tmp_path, truth, {"m": recs}, WHOLE, conventions=DEDUPE)
    assert_same(fast, whole)
    # Both agree with a sort in Python, repeats, ties, NaN and infinities included.
    expected = expected_mrr_and_precision(run, qrel, 3)
    assert {u for (_, u) in fast if fast[("m", u)]["mrr"] is not None} == set(expected)
    for user, (rr, p3) in expected.items():
        assert fast[("m", user)]["mrr"] == pytest.approx(rr, abs=1e-12), user
        assert fast[("m", user)]["precision@3"] == pytest.approx(p3, abs=1e-12), user


@pytest.mark.parametrize("seed", [7, 8])
def test_two_models_missing_zero_and_empty_zero(tmp_path: Path, seed: int) -> None:
    run, qrel = random_case(seed)
    other, _ = random_case(seed + 100)
    recs, truth = write_case(tmp_path, run, qrel)
    recs2, _ = write_case(tmp_path, other, qrel, name="other")
    models = {"a": recs, "b": recs2}
    conventions = Conventions(duplicates="dedupe", empty="zero")
    options = {"conventions": conventions, "missing": "zero"}
    fast = per_user(tmp_path, truth, models, FAST, **options)
    whole = per_user(tmp_path, truth, models, WHOLE, **options)
    assert_same(fast, whole)
    assert {m for m, _ in fast} == {"a", "b"}


def test_ties_at_the_cut_and_short_lists(tmp_path: Path) -> None:
    """Worked by hand, K = 5 the largest cutoff. Tied keys rank by item id
    descending. u1: a 3, then d, c, b at 2, then e: the relevant b is 4th. u2: one
    item, not relevant. u3: m, n, o, then r, q, p tied at the 5th key: q, relevant,
    is 5th and p, 6th, falls out. u4: the relevant t ties u below the cut: 7th."""
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [("u1", "b", 1), ("u2", "z", 2), ("u3", "q", 1), ("u4", "t", 1)],
    )
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,score",
        [
            ("u1", "a", 3), ("u1", "b", 2), ("u1", "c", 2), ("u1", "d", 2), ("u1", "e", 1),
            ("u2", "y", 1),
            ("u3", "m", 5), ("u3", "n", 4), ("u3", "o", 3), ("u3", "p", 2), ("u3", "q", 2),
            ("u3", "r", 2), ("u3", "s", 1),
            ("u4", "a", 9), ("u4", "b", 8), ("u4", "c", 7), ("u4", "d", 6), ("u4", "e", 5),
            ("u4", "t", 1), ("u4", "u", 1),
        ],
    )  # fmt: skip
    values = per_user(tmp_path, truth, {"m": recs}, FAST)
    assert values[("m", "u1")]["mrr"] == pytest.approx(1 / 4)
    assert values[("m", "u1")]["precision@3"] == 0.0
    assert values[("m", "u1")]["hit_rate@5"] == 1.0
    assert values[("m", "u1")]["ndcg@5"] == pytest.approx(1 / math.log2(5))  # IDCG 1
    assert values[("m", "u2")]["mrr"] == 0.0
    assert values[("m", "u2")]["precision@5"] == 0.0
    assert values[("m", "u3")]["mrr"] == pytest.approx(1 / 5)
    assert values[("m", "u3")]["precision@5"] == pytest.approx(1 / 5)
    assert values[("m", "u3")]["precision@3"] == 0.0
    assert values[("m", "u4")]["mrr"] == pytest.approx(1 / 7)
    assert values[("m", "u4")]["hit_rate@5"] == 0.0
    assert_same(values, per_user(tmp_path, truth, {"m": recs}, WHOLE))


def test_rank_column(tmp_path: Path) -> None:
    """A rank column: rank 1 is the top; a tied rank breaks by item id descending.
    u1: a, then c before b (rank 2 both), then d. u2: j01 ... j12 at ranks 1 to 12
    and k at 12, ahead of j12: 12th, beyond the top K."""
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "c"), ("u2", "k")])
    u1 = [("u1", "a", 1), ("u1", "b", 2), ("u1", "c", 2), ("u1", "d", 3)]
    u2 = [("u2", f"j{n:02d}", n) for n in range(1, 13)] + [("u2", "k", 12)]
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", u1 + u2)
    values = per_user(tmp_path, truth, {"m": recs}, FAST)
    assert values[("m", "u1")]["mrr"] == pytest.approx(1 / 2)
    assert values[("m", "u2")]["mrr"] == pytest.approx(1 / 12)
    assert_same(values, per_user(tmp_path, truth, {"m": recs}, WHOLE))


def test_repeated_pairs_are_counted_by_the_screen(tmp_path: Path) -> None:
    """The screen that finds repeated (user, item) pairs sees repeats far apart in
    the file, in CSV and in Parquet; the message counts them."""
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "a")])
    rows = [(f"u{n % 7}", f"i{n}", n) for n in range(200)]
    rows += [("u1", "i1", 0.5), ("u1", "i1", 0.25), ("u3", "i3", 9)]
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,score", rows)
    parquet = tmp_path / "recs.parquet"
    duckdb.connect().execute(
        f"COPY (SELECT * FROM read_csv('{recs}', header = true)) TO '{parquet}' (FORMAT PARQUET)"
    )
    for path in (recs, parquet):
        with pytest.raises(InputError) as err:
            evaluate(truth, [path], metrics="mrr")
        said = (
            f"{path}: user 'u1' lists item 'i1' twice (3 duplicated rows in 2 users); "
            "remove the duplicates or pass {} dedupe to count each item once"
        )
        assert str(err.value) == said.format("duplicates")
        assert err.value.spelt(option_name) == said.format("--duplicates")
