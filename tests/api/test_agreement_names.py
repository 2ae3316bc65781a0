"""``abeval agreement``: experiment names are data (issue 25 item 2). ``-e`` takes
one name per use, whatever its characters; the hidden ``--experiments a,b`` splits
at commas only when the whole text is not an experiment; ``--target-propensities
EXPERIMENT=FILE`` splits at the last ``=`` after which the file exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_store import write_bare
from ingest_store import run

from abeval.api.options import named_files


def _target_files(texts: list[str]) -> dict[str, str]:
    """The CLI's --target-propensities, parsed as the library parses them."""
    form = "EXPERIMENT=FILE"
    return named_files("target_propensities", texts, what="experiment", form=form, named=True)


#: Names with the separators the old options split at, and the parts they split into.
NAMES = ("a,b", "a", "b", "x=y", "x", "ranker/v1", "c")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("agreement-names")
    db = str(folder / "names.duckdb")
    result = run("ingest", str(write_bare(folder / "events.csv", NAMES)), "--db", db, "-q")
    assert result.exit_code == 0, result.output
    return db


def _board(db: str, *args: str) -> list[str]:
    result = run("agreement", "--db", db, "--format", "json", "-o", "-", *args)
    assert result.exit_code == 0, result.output
    return [e["experiment"] for e in json.loads(result.stdout)["experiments"]]


def test_each_e_is_one_name_whatever_it_holds(db: str) -> None:
    assert _board(db, "-e", "a,b") == ["a,b"]
    assert _board(db, "-e", "x=y", "--experiment", "ranker/v1", "-e", "a") == [
        "x=y",
        "ranker/v1",
        "a",
    ]


def test_the_hidden_experiments_keeps_a_name_with_a_comma(db: str) -> None:
    # "a,b" is an experiment: one name, not a and b
    assert _board(db, "--experiments", "a,b") == ["a,b"]
    # "a,c" is none: split at the comma, as before
    assert _board(db, "--experiments", "a,c") == ["a", "c"]
    assert _board(db, "--experiments", "x=y") == ["x=y"]


def test_an_unknown_name_is_not_split(db: str) -> None:
    result = run("agreement", "--db", db, "-e", "a,zz")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith("Error: no experiment 'a,zz' in the store")
    assert result.stdout == ""


def test_the_hidden_experiments_names_an_unknown_part(db: str) -> None:
    result = run("agreement", "--db", db, "--experiments", "a,zz")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith("Error: no experiment 'zz' in the store")


def test_target_files_split_at_the_last_equals_before_an_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("request_id,item_id,position,probability\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "t=2.csv").write_text("request_id,item_id,position,probability\n")
    assert _target_files(["x=y=t.csv", "ranker/v1=runs/t=2.csv", "a,b=t.csv"]) == {
        "x=y": "t.csv",
        "ranker/v1": "runs/t=2.csv",
        "a,b": "t.csv",
    }
    # no such file: split at the first '=' (the library then names the missing file)
    assert _target_files(["x=missing.csv"]) == {"x": "missing.csv"}


def test_a_target_file_for_a_name_with_equals_and_slash_is_accepted(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("request_id,item_id,position,probability\nr,i,1,0.5\n")
    args = ("--target-propensities", "x=y=t.csv", "--target-propensities", "ranker/v1=t.csv")
    assert _board(db, "-e", "x=y", *args) == ["x=y"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target-propensities", "=t.csv"],
         "--target-propensities: '=t.csv': the experiment before '=' is "
         "empty; write EXPERIMENT=FILE"),
        (["--target-propensities", "x="],
         "--target-propensities: 'x=': the file after '=' is missing; "
         "write EXPERIMENT=FILE"),
        (["--target-propensities", "x=y=t.csv", "--target-propensities", "x=y=t.csv"],
         "--target-propensities: experiment 'x=y' is given twice"),
        (["--experiments", ","],
         "--experiments: no experiment given; name them as a,b"),
    ],
)  # fmt: skip
def test_bad_names_are_usage_errors(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("request_id,item_id,position,probability\nr,i,1,0.5\n")
    result = run("agreement", "--db", db, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
    assert result.stdout == ""


def test_an_unknown_target_experiment_is_named_whole(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("request_id,item_id,position,probability\nr,i,1,0.5\n")
    result = run("agreement", "--db", db, "--target-propensities", "x=z=t.csv")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith("Error: no experiment 'x=z' in the store")


def test_e_with_a_history_file_is_a_usage_error(tmp_path: Path) -> None:
    history = tmp_path / "h.csv"
    history.write_text("experiment,signal,offline_lift,offline_se,online_lift,online_se\n")
    result = run("agreement", "--history", str(history), "-e", "a,b")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: --experiment: a history file has no store to pick from"
    )


def test_the_api_takes_a_string_as_one_name(db: str) -> None:
    import abeval

    with abeval.open(db, read_only=True) as store:
        board = store.agreement("a,b", resamples=200)
    assert [e.experiment for e in board.experiments] == ["a,b"]
