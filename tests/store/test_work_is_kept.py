"""Work is kept (issue 25, item 6): ``evaluate --experiment`` waits for a store
that another process locks while it computes, however long, and says so; and the
same files evaluated with other cutoffs or metrics are another evaluation, not a
replacement of the first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ingest_store import query, run
from test_evaluate_record import (  # noqa: F401 (fixtures)
    EXP,
    expected_rows,
    files,
    record,
    rows,
    store,
)

import abeval.analysis.evaluate.record as evaluate_record
import abeval.analysis.evaluate.run as evaluate_run
from abeval.errors import StoreError

_HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    print("ready", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def evaluations(db: str) -> list[tuple[str, str]]:
    return query(
        db,
        "SELECT DISTINCT evaluation_id, string_agg(DISTINCT metric, ',' ORDER BY metric) "
        "FROM offline_evaluations GROUP BY evaluation_id ORDER BY 2",
    )


def test_other_cutoffs_or_metrics_are_another_evaluation(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
) -> None:
    for metrics in ("mrr,coverage@2", "mrr,coverage@2", "mrr@1,coverage@2", "mrr"):
        result = run(
            "evaluate", "-t", str(files["truth"]), "-r", f"control={files['control']}",
            "-r", f"treatment={files['treatment']}", "-m", metrics, "--experiment", EXP,
            "--db", store,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    kept = evaluations(store)
    # The first run recorded twice is one evaluation; the other cutoff and metrics two more.
    assert sorted(m for _, m in kept) == ["coverage@2,mrr", "coverage@2,mrr@1", "mrr"], kept


def test_a_finished_evaluation_waits_for_a_locked_store(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    holders: list[subprocess.Popen[str]] = []
    real = evaluate_run.evaluate

    def evaluate_while_another_process_takes_the_store(*args: Any, **kwargs: Any) -> Any:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, store, "2.5"], stdout=subprocess.PIPE, text=True
        )
        holders.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate_run, "evaluate", evaluate_while_another_process_takes_the_store)
    monkeypatch.setenv("ABEVAL_LOCK_TIMEOUT", "0.2")  # far less than the holder keeps it
    try:
        result = record(store, files)
    finally:
        for proc in holders:
            proc.kill()
            proc.wait()
    assert len(holders) == 1, result.output
    assert result.exit_code == 0, result.output
    waited, recorded = result.stderr.splitlines()[-2:]
    assert waited == (f"the store {store} is locked by process {holders[0].pid}; waiting for it")
    assert recorded.startswith("recorded evaluation ")
    assert len(evaluations(store)) == 1


def test_an_evaluation_the_store_refuses_is_kept_and_recorded_later(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store fault other than the lock (here: a full disk) after the evaluation
    finished: one line, exit 1, nothing in the store, the evaluation kept in the
    current folder; `abeval experiment record FILE` then records exactly the rows
    the evaluation would have written, with its id and time."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    real = evaluate_record.record_evaluation

    def full_disk(*args: Any, **kwargs: Any) -> str:
        raise StoreError("the store's disk is full: free space and run again")

    monkeypatch.setattr(evaluate_record, "record_evaluation", full_disk)
    result = record(store, files)
    assert result.exit_code == 1, result.output
    kept = sorted(work.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("evaluation-")
    assert result.stderr == (
        "Error: the evaluation finished but was not recorded: the store's disk is full: free "
        f"space and run again; it is kept in {kept[0]}: record it with abeval experiment "
        f"record {kept[0]} --db {store}\n"
    )
    assert rows(store) == []

    monkeypatch.setattr(evaluate_record, "record_evaluation", real)
    again = run("experiment", "record", str(kept[0]), "--db", store)
    assert again.exit_code == 0, again.output
    eid = kept[0].name.removeprefix("evaluation-").removesuffix(".json")
    assert again.stderr == (
        f"recorded evaluation {eid} against experiment {EXP} (4 rows) from {kept[0]}\n"
    )
    assert rows(store) == expected_rows()
    assert query(store, "SELECT DISTINCT evaluation_id FROM offline_evaluations") == [(eid,)]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{}", "not an evaluation kept by abeval evaluate --experiment"),
        ("[1, 2]", "not an evaluation kept by abeval evaluate --experiment"),
    ],
)
def test_a_file_that_is_no_kept_evaluation_is_one_line(
    store: str,  # noqa: F811
    tmp_path: Path,
    content: str,
    says: str,
) -> None:
    path = tmp_path / "e.json"
    path.write_text(content)
    result = run("experiment", "record", str(path), "--db", store)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: {says}; give the file abeval evaluate --experiment kept\n"
    )
    assert rows(store) == []


def test_a_kept_file_that_is_not_json_names_line_and_column(
    store: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.json"
    path.write_text('{\n  "kind": nope\n}')
    result = run("experiment", "record", str(path), "--db", store)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}:2:11: not JSON (Expecting value); give the file abeval evaluate "
        "--experiment kept\n"
    )


def test_an_edited_kept_evaluation_is_refused(
    store: str,  # noqa: F811
    files: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    monkeypatch.chdir(tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> str:
        raise StoreError("no space")

    monkeypatch.setattr(evaluate_record, "record_evaluation", refuse)
    assert record(store, files).exit_code == 1
    monkeypatch.undo()
    path = next(tmp_path.glob("evaluation-*.json"))
    doc = json.loads(path.read_text())
    doc["metrics"][0]["value"] = 0.99
    path.write_text(json.dumps(doc))
    result = run("experiment", "record", str(path), "--db", store)
    assert result.exit_code == 1
    assert "its contents do not match its signature (the file was edited" in result.stderr
    assert rows(store) == []
