"""Rprec, bpref and success@K against pytrec_eval (trec_eval's C code) and against
their definitions worked by hand.

The random cases of test_metrics_trec hold what these measures are sensitive to:
judged non-relevant items retrieved and not, retrieved items nobody judged,
relevant items never retrieved, lists shorter than R, ties in score (trec_eval
breaks them by document id descending, as ``evaluate`` does).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytrec_eval
from metrics_helpers import write_csv
from test_metrics_trec import per_user, random_case, write_case

from abeval.analysis.evaluate import evaluate
from abeval.metrics import Conventions, parse_metric

PAIRS = {"rprec": "Rprec", "bpref": "bpref", "success@1": "success_1", "success@5": "success_5"}
MEASURES = {"Rprec", "bpref", "success.1,5,10"}


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_agrees_with_pytrec_eval(tmp_path: Path, seed: int) -> None:
    run, qrel = random_case(seed)
    recs, truth = write_case(tmp_path, run, qrel)
    expected = pytrec_eval.RelevanceEvaluator(qrel, MEASURES).evaluate(run)
    out = tmp_path / "per_user.parquet"
    evaluate(
        truth, [recs], metrics=list(PAIRS), conventions=Conventions(empty="zero"), per_user=out
    )
    got = per_user(out, {parse_metric(m).label: t for m, t in PAIRS.items()})
    assert set(got) == set(expected)
    for user, measures in expected.items():
        for ours, theirs in PAIRS.items():
            label = parse_metric(ours).label
            assert got[user][label] == pytest.approx(measures[theirs], abs=1e-12), (user, ours)


def test_success_is_hit_rate() -> None:
    assert parse_metric("success@5").label == "hit_rate@5"


def test_by_hand(tmp_path: Path) -> None:
    # Ranked by score: a b c d e f. Truth: a 0, b 1, c (unjudged), d 2, e 0, z 1
    # (relevant, never retrieved), y 0 (judged non-relevant, never retrieved).
    # R = 3 (b, d, z), N = 3 (a, e, y).
    # Rprec = hits in the top 3 (a b c: b) / 3 = 1/3.
    # bpref: b has 1 judged non-relevant above (a): 1 - min(1,3)/min(3,3) = 2/3;
    #        d has 1 (a; c is unjudged): 2/3; z is not retrieved: 0.
    #        (2/3 + 2/3) / 3 = 4/9.
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,score",
        [("u", it, 10 - i) for i, it in enumerate("abcdef")],
    )
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [("u", "a", 0), ("u", "b", 1), ("u", "d", 2), ("u", "e", 0), ("u", "z", 1), ("u", "y", 0)],
    )
    result = evaluate(truth, [recs], metrics=["Rprec", "bpref", "success@1", "success@2"])
    assert result.metric("rprec").value == pytest.approx(1 / 3)
    assert result.metric("bpref").value == pytest.approx(4 / 9)
    assert result.metric("hit_rate@1").value == 0
    assert result.metric("hit_rate@2").value == 1


def test_bpref_without_judged_non_relevant_items(tmp_path: Path) -> None:
    # N = 0: no relevant item has a judged non-relevant one above it; each counts 1.
    # Ranked: a (unjudged) b (relevant) c (relevant); R = 3 with x never retrieved.
    recs = write_csv(
        tmp_path / "recs.csv", "user_id,item_id,rank", [("u", "a", 1), ("u", "b", 2), ("u", "c", 3)]
    )
    truth = write_csv(
        tmp_path / "truth.csv", "user_id,item_id", [("u", "b"), ("u", "c"), ("u", "x")]
    )
    result = evaluate(truth, [recs], metrics=["bpref", "rprec"])
    assert result.metric("bpref").value == pytest.approx(2 / 3)
    assert result.metric("rprec").value == pytest.approx(2 / 3)
