"""The examples of docs/metrics.md#tested-examples, through the production SQL kernel."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from metrics_helpers import list_values, write_csv

from abeval.analysis.evaluate import evaluate
from abeval.metrics import Conventions, parse_offline_metrics, ranking_query

# Example 1: R = 5 (two relevant items never shown), binary relevance by position.
AP_LISTS = {
    "a": [1, 0, 0, 1, 0, 1],
    "b": [1, 1, 1, 0, 0, 0],
    "c": [0, 0, 0, 1, 0, 1],
}
AP_JUDGED = {name: [1] * 5 for name in AP_LISTS}


@pytest.mark.parametrize(
    ("denominator", "list_id", "ap6", "ap3"),
    [
        ("R", "a", 0.400000, 0.200000),
        ("min_rk", "a", 0.400000, 0.333333),
        ("hits", "a", 0.666667, 1.000000),
        ("R", "b", 0.600000, 0.600000),
        ("min_rk", "b", 0.600000, 1.000000),
        ("R", "c", 0.116667, 0.0),
        ("min_rk", "c", 0.116667, 0.0),
    ],
)
def test_example_1_average_precision(
    denominator: str, list_id: str, ap6: float, ap3: float
) -> None:
    values = list_values(
        AP_LISTS,
        AP_JUDGED,
        "ap@6,ap@3",
        Conventions(ap_denominator=denominator),  # type: ignore[arg-type]
    )
    assert values["ap@6"][list_id] == pytest.approx(ap6, abs=5e-7)
    assert values["ap@3"][list_id] == pytest.approx(ap3, abs=5e-7)


def test_example_1_map_is_the_mean_of_ap() -> None:
    values = list_values(AP_LISTS, AP_JUDGED, "map@6")
    assert sum(v or 0.0 for v in values["map@6"].values()) / 3 == pytest.approx(
        (0.4 + 0.6 + 0.116667) / 3, abs=5e-7
    )


def _example_2_files(tmp_path: Path) -> tuple[Path, Path]:
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,rank",
        [("u1", item, i + 1) for i, item in enumerate("ABCLYUFZ")]
        + [("u2", item, i + 1) for i, item in enumerate("NXYBM")],
    )
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id",
        [("u1", "A"), ("u1", "K"), ("u1", "B"), ("u1", "Z"), ("u2", "E"), ("u2", "B")],
    )
    return recs, truth


def test_example_2_precision_of_one_list(tmp_path: Path) -> None:
    recs = write_csv(
        tmp_path / "one.csv",
        "user_id,item_id,rank",
        [("u1", item, i + 1) for i, item in enumerate("ABCLYUFZ")],
    )
    truth = write_csv(
        tmp_path / "t.csv", "user_id,item_id", [("u1", "A"), ("u1", "K"), ("u1", "B"), ("u1", "Z")]
    )
    result = evaluate(truth, [recs], metrics="precision@5")
    assert result.metric("precision@5").value == pytest.approx(0.400000, abs=5e-7)


def test_example_2_mean_precision_and_recall_are_macro(tmp_path: Path) -> None:
    recs, truth = _example_2_files(tmp_path)
    result = evaluate(truth, [recs], metrics="precision@3,recall@3")
    assert result.metric("precision@3").value == pytest.approx(0.333333, abs=5e-7)
    assert result.metric("recall@3").value == pytest.approx(0.250000, abs=5e-7)
    # Not the pooled hits / Σ min(K, R) of `implicit` (0.4).
    assert result.metric("precision@3").value != pytest.approx(0.4, abs=1e-3)


GRADED = {"g": [3, 2, 3, 0, 1, 2]}
GRADED_JUDGED = {"g": [3, 2, 3, 1, 2]}


def _dcg_idcg(gain: str, k: int) -> tuple[float, float, float]:
    specs = parse_offline_metrics(f"ndcg@{k}", conventions=Conventions(gain=gain))  # type: ignore[arg-type]
    query = ranking_query(specs)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE ranked AS SELECT * FROM (VALUES "
        + ", ".join(f"('m', 'u', 'g', 'i{i}', {i + 1}, {g}.0)" for i, g in enumerate(GRADED["g"]))
        + ") t(grp, user_id, list_id, item_id, rank, gain)"
    )
    con.execute(
        "CREATE TABLE judged AS SELECT * FROM (VALUES "
        + ", ".join(f"('g', {g}.0)" for g in GRADED_JUDGED["g"])
        + ") t(list_id, gain)"
    )
    col = query.columns[0].column
    row = con.execute(
        f"WITH {query.ctes} SELECT p.dcg_{gain}_{k}, p.idcg_{gain}_{k}, v.{col} "
        "FROM k_per_list p JOIN k_list_values v ON v.list_id = p.list_id"
    ).fetchone()
    assert row is not None
    return float(row[0]), float(row[1]), float(row[2])


def test_example_3_linear_gain() -> None:
    dcg, idcg, ndcg = _dcg_idcg("linear", 6)
    assert dcg == pytest.approx(6.861127, abs=5e-7)
    assert idcg == pytest.approx(7.140995, abs=5e-7)
    assert ndcg == pytest.approx(0.960808, abs=5e-7)


def test_example_3_exp2_gain() -> None:
    dcg, idcg, ndcg = _dcg_idcg("exp2", 6)
    assert dcg == pytest.approx(13.848264, abs=5e-7)
    assert idcg == pytest.approx(14.595391, abs=5e-7)
    assert ndcg == pytest.approx(0.948811, abs=5e-7)


def test_example_3_binary_gain_and_cutoff() -> None:
    assert _dcg_idcg("binary", 6)[2] == pytest.approx(0.974743, abs=5e-7)
    assert _dcg_idcg("linear", 5)[2] == pytest.approx(0.861044, abs=5e-7)


def test_example_4_ties_break_by_item_id_descending(tmp_path: Path) -> None:
    recs = write_csv(
        tmp_path / "r.csv",
        "user_id,item_id,score",
        [("q", "d1", 1), ("q", "d2", 1), ("q", "d3", 1)],
    )
    truth = write_csv(tmp_path / "t.csv", "user_id,item_id", [("q", "d3")])
    result = evaluate(truth, [recs], metrics="ap,ndcg")
    assert result.metric("ap").value == pytest.approx(1.0, abs=1e-12)
    assert result.metric("ndcg").value == pytest.approx(1.0, abs=1e-12)
    # In input order d3 would be third: 1/3 and 1/log2(4).
    reordered = write_csv(
        tmp_path / "r2.csv",
        "user_id,item_id,rank",
        [("q", "d1", 1), ("q", "d2", 2), ("q", "d3", 3)],
    )
    by_rank = evaluate(truth, [reordered], metrics="ap,ndcg")
    assert by_rank.metric("ap").value == pytest.approx(0.333333, abs=5e-7)
    assert by_rank.metric("ndcg").value == pytest.approx(0.5, abs=1e-12)
