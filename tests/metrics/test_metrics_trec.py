"""Differential tests against pytrec_eval (trec_eval's own C code) on random data.

Random runs with ties in score, graded relevance, users whose judgments are all
non-relevant, relevant items that were never retrieved, cutoffs larger than the
list, users without truth and truth users without a run. trec_eval's
conventions: ranking by score descending then document id descending; a query
is in its output when it has both judgments and a run; a judged query with no
relevant document scores 0 everywhere (abeval's ``empty=zero``).
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metrics_helpers import write_csv

from abeval.analysis.evaluate import evaluate
from abeval.metrics import Conventions

KS = (1, 3, 5, 10, 50)


def pairs_for(ks: tuple[int, ...], whole_list: bool) -> dict[str, str]:
    """abeval metric -> trec_eval measure."""
    pairs: dict[str, str] = {"mrr": "recip_rank"}
    if whole_list:
        pairs.update({"ap": "map", "ndcg": "ndcg"})
    for k in ks:
        pairs[f"precision@{k}"] = f"P_{k}"
        pairs[f"recall@{k}"] = f"recall_{k}"
        pairs[f"ap@{k}"] = f"map_cut_{k}"
        pairs[f"ndcg@{k}"] = f"ndcg_cut_{k}"
    return pairs


# Whole-list AP/NDCG make evaluate rank every item with a window; without them it
# takes the top K with an aggregate and ranks the first relevant item beyond K by
# counting (K = 10 < most lists here): both must agree with trec_eval.
PAIRS = pairs_for(KS, whole_list=True)
TOP_K_PAIRS = pairs_for((1, 3, 5, 10), whole_list=False)
TREC_MEASURES = {
    "recip_rank",
    "map",
    "ndcg",
    "P." + ",".join(map(str, KS)),
    "recall." + ",".join(map(str, KS)),
    "map_cut." + ",".join(map(str, KS)),
    "ndcg_cut." + ",".join(map(str, KS)),
}


def random_case(seed: int, n_users: int = 60) -> tuple[dict, dict]:
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(40)] + [f"doc{i}" for i in range(15)] + ["x", "Y", "d"]
    run: dict[str, dict[str, float]] = {}
    qrel: dict[str, dict[str, int]] = {}
    for u in range(n_users):
        user = f"q{u}"
        kind = rng.random()
        length = rng.choice([1, 2, 3, 5, 8, 20, 40])
        items = rng.sample(pool, length)
        if kind > 0.08:  # 8 % of users have truth but no run
            run[user] = {it: round(rng.choice([rng.random(), 0.5, 1.0]), 1) for it in items}
        if kind < 0.92:  # 8 % have a run but no truth
            judged = rng.sample(items, rng.randint(0, len(items))) + rng.sample(pool, 3)
            if rng.random() < 0.15:  # only non-relevant judgments
                qrel[user] = {it: 0 for it in judged}
            else:
                qrel[user] = {it: rng.choice([0, 1, 1, 2, 3]) for it in judged}
    return run, qrel


def write_case(tmp_path: Path, run: dict, qrel: dict) -> tuple[Path, Path]:
    recs = write_csv(
        tmp_path / "run.csv",
        "user_id,item_id,score",
        [(u, it, s) for u, docs in run.items() for it, s in docs.items()],
    )
    truth = write_csv(
        tmp_path / "qrels.csv",
        "user_id,item_id,relevance",
        [(u, it, r) for u, docs in qrel.items() for it, r in docs.items()],
    )
    return recs, truth


def per_user(path: Path, pairs: dict[str, str] = PAIRS) -> dict[str, dict[str, float | None]]:
    con = duckdb.connect()
    cur = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
    cols = [d[0] for d in cur.description or []]
    out: dict[str, dict[str, float | None]] = {}
    for row in cur.fetchall():
        rec = dict(zip(cols, row, strict=True))
        out[str(rec["user_id"])] = {k: rec[k] for k in pairs}
    return out


@pytest.mark.parametrize(
    ("seed", "pairs"),
    [(1, PAIRS), (2, PAIRS), (3, PAIRS), (4, TOP_K_PAIRS), (5, TOP_K_PAIRS), (6, TOP_K_PAIRS)],
)
def test_agrees_with_pytrec_eval_with_empty_zero(
    tmp_path: Path, seed: int, pairs: dict[str, str]
) -> None:
    run, qrel = random_case(seed)
    recs, truth = write_case(tmp_path, run, qrel)
    expected = pytrec_eval.RelevanceEvaluator(qrel, TREC_MEASURES).evaluate(run)
    out = tmp_path / "per_user.parquet"
    result = evaluate(
        truth, [recs], metrics=list(pairs), conventions=Conventions(empty="zero"), per_user=out
    )
    got = per_user(out, pairs)
    assert set(got) == set(expected)
    for user, measures in expected.items():
        for ours, theirs in pairs.items():
            assert got[user][ours] == pytest.approx(measures[theirs], abs=1e-9), (user, ours)
    # Users on one side only are counted, not silently dropped.
    cov = result.coverage[0]
    assert cov.users_without_truth == len(set(run) - set(qrel))
    assert cov.truth_users_without_recommendations == len(set(qrel) - set(run))
    assert cov.users_evaluated == len(expected)


@pytest.mark.parametrize("seed", [11, 12])
def test_skip_leaves_out_users_without_relevant_items(tmp_path: Path, seed: int) -> None:
    run, qrel = random_case(seed)
    recs, truth = write_case(tmp_path, run, qrel)
    expected = pytrec_eval.RelevanceEvaluator(qrel, TREC_MEASURES).evaluate(run)
    out = tmp_path / "per_user.parquet"
    result = evaluate(truth, [recs], metrics=list(PAIRS), per_user=out)
    got = per_user(out)
    no_relevant = {u for u in expected if not any(r > 0 for r in qrel[u].values())}
    assert no_relevant, "the random case should have users without relevant items"
    for user in expected:
        for ours, theirs in PAIRS.items():
            if user in no_relevant and not ours.startswith("precision"):
                assert got[user][ours] is None
            else:
                assert got[user][ours] == pytest.approx(expected[user][theirs], abs=1e-9)
    ndcg = result.metric("ndcg@10")
    assert ndcg.left_out["lists_without_relevant"] == len(no_relevant)
    assert ndcg.users == len(expected) - len(no_relevant)
    mean = sum(expected[u]["ndcg_cut_10"] for u in expected if u not in no_relevant) / ndcg.users
    assert ndcg.value == pytest.approx(mean, abs=1e-12)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lists=st.dictionaries(
        st.sampled_from([f"u{i}" for i in range(8)]),
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "aa", "B", "c1", "d", "e9"]),
            st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.sampled_from([0, 0, 1, 2, 3])),
            min_size=1,
        ),
        min_size=1,
    )
)
def test_hypothesis_ties_and_grades(tmp_path: Path, lists: dict) -> None:
    run = {u: {it: s for it, (s, _) in docs.items()} for u, docs in lists.items()}
    qrel = {u: {it: r for it, (_, r) in docs.items()} for u, docs in lists.items()}
    recs, truth = write_case(tmp_path, run, qrel)
    expected = pytrec_eval.RelevanceEvaluator(qrel, TREC_MEASURES).evaluate(run)
    out = tmp_path / "pu.parquet"
    evaluate(
        truth, [recs], metrics=list(PAIRS), conventions=Conventions(empty="zero"), per_user=out
    )
    got = per_user(out)
    for user, measures in expected.items():
        for ours, theirs in PAIRS.items():
            assert got[user][ours] == pytest.approx(measures[theirs], abs=1e-9), (user, ours)
