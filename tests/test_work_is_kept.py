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
from test_evaluate_record import EXP, files, record, store  # noqa: F401 (fixtures)

import abeval.analysis.evaluate.run as evaluate_run

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
    assert len(holders) == 1
    assert result.exit_code == 0, result.output
    waited, recorded = result.stderr.splitlines()[-2:]
    assert waited == (f"the store {store} is locked by process {holders[0].pid}; waiting for it")
    assert recorded.startswith("recorded evaluation ")
    assert len(evaluations(store)) == 1
