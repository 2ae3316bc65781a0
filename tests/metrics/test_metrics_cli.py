"""``abeval evaluate`` through Typer's CliRunner: bad inputs give exit 1 and one line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from metrics_helpers import write_csv
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()


@pytest.fixture
def truth(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "a"), ("u9", "a")])


def _error(args: list[str], code: int = 1) -> str:
    result = runner.invoke(app, ["evaluate", *args])
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


def test_missing_column_lists_what_is_expected(tmp_path: Path, truth: Path) -> None:
    recs = write_csv(tmp_path / "recs.csv", "user_id,item,score", [("u1", "a", 1)])
    assert _error(["--truth", str(truth), "--recommendations", str(recs)]) == (
        f"Error: {recs}: missing column item_id; expected columns user_id, item_id and rank "
        "or score, one row per recommended item (found: user_id, item, score); "
        "rename the columns in the header"
    )


def test_missing_rank_and_score(tmp_path: Path, truth: Path) -> None:
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,weight", [("u1", "a", 1)])
    message = _error(["-t", str(truth), "-r", str(recs)])
    assert message == (
        f"Error: {recs}: missing column rank or score; expected columns user_id, item_id and "
        "rank or score, one row per recommended item; add a rank (1 = top) or a score "
        "(higher = better) column"
    )


def test_non_numeric_score_names_the_line(tmp_path: Path, truth: Path) -> None:
    recs = write_csv(
        tmp_path / "recs.csv", "user_id,item_id,score", [("u1", "a", 1), ("u1", "b", "high")]
    )
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}:3:score: 'high' is not a number; "
        "write a number in column score or remove the row"
    )


def test_non_numeric_score_past_the_csv_sniffer_sample(tmp_path: Path, truth: Path) -> None:
    rows: list[tuple[object, ...]] = [(f"u{i}", f"i{i}", i) for i in range(30000)]
    rows.append(("u1", "b", "n/a"))
    recs = write_csv(tmp_path / "big.csv", "user_id,item_id,score", rows)
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}:30002:score: 'n/a' is not a number; "
        "write a number in column score or remove the row"
    )


def test_non_numeric_rating_in_jsonl_truth(tmp_path: Path) -> None:
    truth = tmp_path / "truth.jsonl"
    truth.write_text(
        '{"user_id": "u1", "item_id": "a", "rating": 4}\n'
        '{"user_id": "u1", "item_id": "b", "rating": "five"}\n'
    )
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1)])
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {truth}:2:rating: 'five' is not a number; "
        "write a number in column rating or remove the row"
    )


def test_non_numeric_score_in_parquet_names_the_row(tmp_path: Path, truth: Path) -> None:
    recs = tmp_path / "recs.parquet"
    pq.write_table(
        pa.table({"user_id": ["u1", "u1"], "item_id": ["a", "b"], "score": ["0.5", "x"]}), recs
    )
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}:row 2:score: 'x' is not a number; "
        "write a number in column score or remove the row"
    )


def test_duplicated_item_in_one_list(tmp_path: Path, truth: Path) -> None:
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,score",
        [("u1", "a", 1), ("u1", "b", 0.5), ("u1", "a", 0.2)],
    )
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}: user 'u1' lists item 'a' twice; remove the duplicates or pass "
        "--duplicates dedupe to count each item once"
    )


def test_dedupe_keeps_the_best_position_with_a_warning(tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "a")])
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,score",
        [("u1", "b", 0.9), ("u1", "a", 0.1), ("u1", "a", 0.8)],
    )
    result = runner.invoke(
        app,
        [
            "evaluate",
            "-t",
            str(truth),
            "-r",
            str(recs),
            "--duplicates",
            "dedupe",
            "-m",
            "mrr",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == (
        f"Warning: {recs}: 1 repeated items in 1 users' lists counted once, at their best position"
    )
    data = json.loads(result.stdout)
    assert data["metrics"][0]["value"] == pytest.approx(0.5)  # a at rank 2, not 3


@pytest.mark.parametrize("content", ["", "user_id,item_id,score\n"])
def test_empty_file(tmp_path: Path, truth: Path, content: str) -> None:
    recs = tmp_path / "recs.csv"
    recs.write_text(content)
    what = "the file is empty" if not content else "the file has no rows"
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}: {what}; expected columns user_id, item_id and rank or score, "
        "one row per recommended item"
    )


def test_missing_file_and_unknown_metric(tmp_path: Path, truth: Path) -> None:
    recs = tmp_path / "nope.csv"
    assert _error(["-t", str(truth), "-r", str(recs)]) == (
        f"Error: {recs}: no such recommendations file; check the path"
    )
    ok = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1)])
    message = _error(["-t", str(truth), "-r", str(ok), "-m", "ndgc@10"], code=2)
    assert message.startswith("Error: --metrics 'ndgc@10': unknown metric 'ndgc@10'; did you mean")


def test_users_on_one_side_are_counted(tmp_path: Path) -> None:
    truth = write_csv(
        tmp_path / "truth.csv",
        "user_id,item_id,relevance",
        [("u1", "a", 1), ("u2", "b", 1), ("u3", "c", 1), ("u4", "d", 0)],
    )
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,rank",
        [("u1", "a", 1), ("u4", "d", 1), ("u8", "a", 1), ("u9", "a", 1), ("u9", "b", 2)],
    )
    result = runner.invoke(
        app, ["evaluate", "-t", str(truth), "-r", str(recs), "-m", "ndcg@5", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    cov = data["coverage"][0]
    assert cov["users_in_recommendations"] == 4
    assert cov["users_without_truth"] == 2  # u8, u9
    assert cov["users_evaluated"] == 2  # u1, u4
    assert cov["truth_users"] == 4
    assert cov["truth_users_without_recommendations"] == 2  # u2, u3
    assert cov["truth_users_without_relevant"] == 1  # u4
    ndcg = data["metrics"][0]
    assert ndcg["users"] == 1 and ndcg["left_out"]["lists_without_relevant"] == 1
    text = runner.invoke(app, ["evaluate", "-t", str(truth), "-r", str(recs), "-m", "ndcg@5"])
    assert "2 users without truth left out" in text.stdout
    assert "2 of 4 truth users without recommendations" in text.stdout


def test_missing_zero_scores_truth_users_without_a_list(tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", [("u1", "a"), ("u2", "b")])
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1)])
    result = runner.invoke(
        app,
        [
            "evaluate",
            "-t",
            str(truth),
            "-r",
            str(recs),
            "-m",
            "ndcg@5,precision@1",
            "--missing",
            "zero",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    values = {m["metric"]: m["value"] for m in json.loads(result.stdout)["metrics"]}
    assert values == {"ndcg@5": pytest.approx(0.5), "precision@1": pytest.approx(0.5)}


def test_per_user_csv_and_json_without_nan(tmp_path: Path) -> None:
    truth = write_csv(
        tmp_path / "truth.csv", "user_id,item_id,relevance", [("u1", "a", 2), ("u2", "b", 0)]
    )
    recs = write_csv(
        tmp_path / "recs.csv",
        "user_id,item_id,score",
        [("u1", "x", 0.9), ("u1", "a", 0.5), ("u2", "b", 1)],
    )
    out = tmp_path / "per_user.csv"
    result = runner.invoke(
        app,
        ["evaluate", "-t", str(truth), "-r", str(recs), "-m", "ndcg@2,precision@2",
         "--per-user", str(out), "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # strict JSON: no NaN anywhere
    assert data["per_user_path"] == str(out)
    lines = out.read_text().splitlines()
    assert lines[0] == "model,user_id,lists,ndcg@2,precision@2"
    u1 = next(line for line in lines if ",u1," in line).split(",")
    assert float(u1[3]) == pytest.approx(1 / 1.584962500721156)  # a at rank 2, gain 2
    assert float(u1[4]) == pytest.approx(0.5)
    u2 = next(line for line in lines if ",u2," in line).split(",")
    assert u2[3] == "" and float(u2[4]) == 0.0  # no relevant item: NDCG left out, P@2 = 0


def test_undefined_metric_is_null_in_json(tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id,relevance", [("u1", "a", 0)])
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1)])
    result = runner.invoke(
        app, ["evaluate", "-t", str(truth), "-r", str(recs), "-m", "mrr", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    mrr = json.loads(result.stdout)["metrics"][0]
    assert mrr["value"] is None and mrr["status"] == "undefined"
    assert mrr["left_out"] == {"lists_without_relevant": 1, "users_without_value": 1}


@pytest.mark.parametrize(
    ("k", "problem"),
    [
        ("5,x", "give cutoffs as whole numbers, as in 5,10,20"),
        ("0,5", "give cutoffs of at least 1, as in 5,10,20"),
    ],
)
def test_bad_cutoffs_name_the_option(truth: Path, k: str, problem: str) -> None:
    # A bad option value is a usage error: exit code 2, one line naming the option.
    line = _error(["-t", str(truth), "-r", str(truth), "--k", k], code=2)
    assert line == f"Error: --k {k!r}: {problem}"


def test_text_report_to_a_folder_that_does_not_exist(tmp_path: Path, truth: Path) -> None:
    # -o does not create folders (issue 22): a typo in the folder would leave a tree.
    recs = write_csv(tmp_path / "recs.csv", "user_id,item_id,rank", [("u1", "a", 1)])
    out = tmp_path / "new" / "evaluation.txt"
    result = runner.invoke(app, ["evaluate", "-t", str(truth), "-r", str(recs), "-o", str(out)])
    assert result.exit_code == 1, result.output
    folder = tmp_path / "new"
    assert result.stderr == (
        f"Error: cannot write {out}: the folder {folder} does not exist; "
        f"create it (mkdir -p {folder}) or choose another path\n"
    )
    assert not folder.exists()
    folder.mkdir()
    result = runner.invoke(app, ["evaluate", "-t", str(truth), "-r", str(recs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith(f"truth: {truth} (2 rows, 2 users)\n")
    assert not out.with_name("evaluation.txt.tmp").exists()
