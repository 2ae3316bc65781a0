"""Beyond-accuracy and rating metrics against hand calculations."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from metrics_helpers import write_csv

from abeval.analysis.evaluate import evaluate


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,rank",
        [("u1", "a", 1), ("u1", "b", 2), ("u1", "c", 3), ("u2", "a", 1), ("u2", "d", 2),
         ("u3", "e", 1), ("u5", "f", 1)],
    )  # fmt: skip
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id",
        [("u1", "b"), ("u2", "d"), ("u3", "x"), ("u5", "f")],
    )
    items = write_csv(
        tmp_path / "items.csv",
        "item_id,category",
        [("a", "X"), ("b", "X"), ("c", "Y"), ("d", "Y"), ("e", "Z"), ("x", "Z"), ("f", "Y")],
    )
    history = write_csv(
        tmp_path / "history.csv",
        "user_id,item_id",
        [("u1", "a"), ("u1", "c"), ("u2", "a"), ("u4", "d")],
    )
    return {"recs": recs, "truth": truth, "items": items, "history": history}


def test_coverage_gini_entropy_novelty(files: dict[str, Path]) -> None:
    result = evaluate(
        files["truth"],
        [files["recs"]],
        items=files["items"],
        history=files["history"],
        metrics="coverage@2,gini@2,entropy@2,novelty@2",
    )
    coverage = result.metric("coverage@2")
    assert coverage.value == pytest.approx(5 / 7)
    assert coverage.counts == {"items_shown": 5, "catalogue_items": 7}
    # exposure counts over the 7 catalogue items: 0, 0, 1, 1, 1, 1, 2
    assert result.metric("gini@2").value == pytest.approx(16 / 42)
    p = [2 / 6] + [1 / 6] * 4
    assert result.metric("entropy@2").value == pytest.approx(-sum(x * math.log2(x) for x in p))
    # popularity in the history (3 users): a 2/3, d 1/3; b, e, f never interacted
    # with: add-one smoothing gives them 1 / (3 + 1), and their slots still count.
    # Top-2 slots: a, b (u1), a, d (u2), e (u3), f (u5).
    novelty = result.metric("novelty@2")
    expected = (2 * -math.log2(2 / 3) + -math.log2(1 / 3) + 3 * -math.log2(1 / 4)) / 6
    assert novelty.value == pytest.approx(expected)
    assert novelty.left_out == {}
    assert novelty.counts == {"slots_without_popularity": 3, "slots": 6}


def test_diversity_and_serendipity_with_categories(files: dict[str, Path]) -> None:
    result = evaluate(
        files["truth"],
        [files["recs"]],
        items=files["items"],
        history=files["history"],
        metrics="diversity@3,serendipity@3",
    )
    diversity = result.metric("diversity@3")
    # u1 [a, b, c]: only (a, b) share a category -> 1 - 1/3; u2 [a, d] -> 1.
    assert diversity.value == pytest.approx((2 / 3 + 1) / 2)
    assert diversity.stats is not None and diversity.stats.n == 2
    assert diversity.stats.ss == pytest.approx(2 * (1 / 6) ** 2)
    assert diversity.left_out == {"lists_with_fewer_than_two_items": 2}
    # relevant shown items: b for u1 (history a: same category, c: not) -> 1 - 1/2;
    # d for u2 (history a) -> 1; f for u5, who has no history: left out.
    serendipity = result.metric("serendipity@3")
    assert serendipity.value == pytest.approx(0.75)
    assert serendipity.left_out == {"items_without_history": 1}


def test_diversity_at_several_cutoffs_in_one_query(files: dict[str, Path]) -> None:
    """diversity@1, @2 and @3 share one pass over the pairs of the top 3."""
    result = evaluate(
        files["truth"],
        [files["recs"]],
        items=files["items"],
        metrics="diversity@3,diversity@1,diversity@2",
    )
    # @2: u1 [a, b] same category -> 0; u2 [a, d] -> 1; u3 and u5 have one item.
    at2 = result.metric("diversity@2")
    assert at2.value == pytest.approx(0.5)
    assert at2.stats is not None and at2.stats.n == 2
    assert at2.left_out == {"lists_with_fewer_than_two_items": 2}
    # @3 as in the test above; @1: no list has a pair.
    assert result.metric("diversity@3").value == pytest.approx((2 / 3 + 1) / 2)
    at1 = result.metric("diversity@1")
    assert at1.value is None and at1.status == "undefined"
    assert at1.left_out == {"lists_with_fewer_than_two_items": 4}


def test_diversity_with_feature_vectors(tmp_path: Path) -> None:
    recs = write_csv(
        tmp_path / "r.csv", "user_id,item_id,rank", [("u1", "a", 1), ("u1", "b", 2), ("u1", "c", 3)]
    )
    truth = write_csv(tmp_path / "t.csv", "user_id,item_id", [("u1", "a")])
    items = tmp_path / "items.jsonl"
    items.write_text(
        "\n".join(
            json.dumps({"item_id": i, "features": f})
            for i, f in (("a", [1, 0]), ("b", [0, 1]), ("c", [1, 1]))
        )
    )
    result = evaluate(truth, [recs], items=items, metrics="diversity@3")
    assert result.metric("diversity@3").value == pytest.approx(1 - 2 * math.sqrt(0.5) / 3)
    assert result.metric("diversity@3").convention["similarity"] == "features"


def test_diversity_from_co_occurrence(tmp_path: Path) -> None:
    recs = write_csv(tmp_path / "r.csv", "user_id,item_id,rank", [("u1", "a", 1), ("u1", "b", 2)])
    truth = write_csv(
        tmp_path / "t.csv",
        "user_id,item_id",
        [("u1", "a"), ("u1", "b"), ("u2", "a"), ("u2", "b"), ("u3", "a")],
    )
    result = evaluate(truth, [recs], metrics="diversity@2")
    # users of a: 3, of b: 2, of both: 2 -> cosine 2 / sqrt(6)
    assert result.metric("diversity@2").value == pytest.approx(1 - 2 / math.sqrt(6))


def test_rmse_and_mae_with_coverage(tmp_path: Path) -> None:
    preds = write_csv(
        tmp_path / "p.csv",
        "user_id,item_id,prediction",
        [("u1", "a", 4.0), ("u1", "b", 2.0), ("u2", "a", 3.5), ("u9", "z", 1.0)],
    )
    truth = write_csv(
        tmp_path / "t.csv",
        "user_id,item_id,rating",
        [("u1", "a", 5), ("u1", "b", 2), ("u2", "a", 3), ("u2", "c", 4)],
    )
    result = evaluate(truth, predictions=[preds])
    by = {r.metric: r for r in result.ratings}
    assert by["rmse"].value == pytest.approx(math.sqrt((1 + 0 + 0.25) / 3))
    assert by["mae"].value == pytest.approx(0.5)
    assert (by["rmse"].pairs_predicted, by["rmse"].truth_pairs) == (3, 4)
    assert by["rmse"].coverage == pytest.approx(0.75)
    assert by["rmse"].predictions_without_truth == 1
    assert json.dumps(result.to_dict(), allow_nan=False)
