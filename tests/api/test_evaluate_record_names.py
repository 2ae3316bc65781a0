"""Named models in ``abeval evaluate``: ``-r NAME=PATH`` and ``--predictions NAME=PATH``
beside plain paths (named after the file), the rule for a path that holds '='
(docs/usage.md#named-models), and one-line usage errors for bad names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ingest_store import run
from test_evaluate_record import CONTROL, TREATMENT, TRUTH, write_lists

from abeval.files import model_argument, named_models


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Files in the working directory: truth.csv, ctl.csv, trt.csv."""
    monkeypatch.chdir(tmp_path)
    Path("truth.csv").write_text(
        "user_id,item_id\n" + "".join(f"{u},{i}\n" for u, i in TRUTH.items())
    )
    write_lists(Path("ctl.csv"), CONTROL)
    write_lists(Path("trt.csv"), TREATMENT)
    return tmp_path


def evaluate(*args: str) -> tuple[int, dict | str]:
    result = run("evaluate", "-t", "truth.csv", "-m", "mrr", "--format", "json", *args)
    if result.exit_code:
        return result.exit_code, result.stderr.splitlines()[-1]
    return 0, json.loads(result.stdout)


def test_names_given_and_names_from_the_file(here: Path) -> None:
    code, doc = evaluate("-r", "base=ctl.csv", "-r", "trt.csv")
    assert code == 0 and isinstance(doc, dict)
    assert doc["models"] == ["base", "trt"]  # the first is the baseline without --experiment
    assert [(f["name"], f["path"]) for f in doc["files"][1:]] == [
        ("base", "ctl.csv"),
        ("trt", "trt.csv"),
    ]
    [c] = doc["comparisons"]
    assert (c["model"], c["baseline"], c["difference"]) == ("trt", "base", 0.25)
    assert doc["recorded"] is None


def test_an_existing_file_with_an_equals_sign_is_a_path(here: Path) -> None:
    shutil.copy("ctl.csv", "v=1.csv")
    code, doc = evaluate("-r", "v=1.csv", "-r", "new=v=1.csv")
    assert code == 0 and isinstance(doc, dict)
    # The whole text names a file: a path, named after its stem; else split at the first '='.
    assert doc["models"] == ["v=1", "new"]
    assert [f["path"] for f in doc["files"][1:]] == ["v=1.csv", "v=1.csv"]
    assert model_argument("runs/a=b.csv") == (None, "runs/a=b.csv")  # no FILE exists


def test_a_model_name_may_hold_a_slash(here: Path) -> None:
    # Issue 25: `-r ranker/v1=FILE` was taken as a path named 'ranker/v1=ctl.csv'.
    assert model_argument("ranker/v1=ctl.csv") == ("ranker/v1", "ctl.csv")
    assert model_argument("a=b=ctl.csv") == ("a=b", "ctl.csv")
    code, doc = evaluate("-r", "ranker/v1=ctl.csv", "-r", "trt.csv")
    assert code == 0 and isinstance(doc, dict), doc
    assert doc["models"] == ["ranker/v1", "trt"]


def test_named_predictions(here: Path) -> None:
    Path("ratings.csv").write_text("user_id,item_id,rating\nu1,a,4\n")
    Path("p.csv").write_text("user_id,item_id,prediction\nu1,a,3\n")
    result = run(
        "evaluate", "-t", "ratings.csv", "--predictions", "svd=p.csv", "--format", "json"
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(r["model"], r["metric"], r["value"]) for r in doc["ratings"]] == [
        ("svd", "rmse", 1.0),
        ("svd", "mae", 1.0),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-r", "=ctl.csv"],
            "--recommendations: '=ctl.csv': the model name before '=' is empty; write NAME=PATH",
        ),
        (
            ["-r", "base="],
            "--recommendations: 'base=': the file after '=' is missing; write NAME=PATH",
        ),
        (
            ["-r", "a=ctl.csv", "-r", "a=trt.csv"],
            "--recommendations: two models are named 'a' (ctl.csv and "
            "trt.csv); give each its own name with NAME=PATH",
        ),
        (
            ["-r", "ctl.csv", "-r", "ctl=trt.csv"],
            "--recommendations: two models are named 'ctl' (ctl.csv and "
            "trt.csv); give each its own name with NAME=PATH",
        ),
        (
            ["-r", "x=missing.csv"],
            "--recommendations: 'x=missing.csv': no such file, nor "
            "'missing.csv' (as NAME=PATH); check the path",
        ),
        (
            ["--predictions", " =ctl.csv"],
            "--predictions: ' =ctl.csv': the model name before '=' is empty; write NAME=PATH",
        ),
        (
            ["-r", "ctl.csv", "--db", "x.duckdb"],
            "--db 'x.duckdb': a store records an evaluation: give --experiment too",
        ),
    ],
)
def test_bad_names_are_usage_errors(here: Path, args: list[str], message: str) -> None:
    assert evaluate(*args) == (2, f"Error: {message}")
    assert not Path("x.duckdb").exists()


def test_a_path_that_is_not_a_name_keeps_the_file_error(here: Path) -> None:
    assert evaluate("-r", "runs/a=b.csv") == (
        1,
        "Error: runs/a=b.csv: no such recommendations file; check the path",
    )


def test_named_models_helper() -> None:
    assert named_models(["x/bm25.csv", "x/two.csv"]) == {"bm25": "x/bm25.csv", "two": "x/two.csv"}
    # Two stems alike: the whole paths, as before names existed.
    assert named_models(["a/m.csv", "b/m.csv"]) == {"a/m.csv": "a/m.csv", "b/m.csv": "b/m.csv"}
    with pytest.raises(ValueError, match=r"two models are named 'm\.csv' \(m\.csv and m\.csv\)"):
        named_models(["m.csv", "m.csv"])
