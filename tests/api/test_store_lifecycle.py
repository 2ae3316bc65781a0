"""The store's lifecycle through the API (issue 35, item 1): a DuckDB file held
read-only between calls so that other processes read it meanwhile, opened for
writing only for a write, and closed for good by ``close()``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest
from file_holders import holders
from ingest_store import simulated_store

import abeval
from abeval.errors import AbevalError, StoreClosed, StoreError, StoreHeldHere

ABEVAL = [sys.executable, "-m", "abeval"]
EVENTS = "experiment,arm,user_id,ts,event_type\nlate-one,A,u1,2024-05-01,exposure\n"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return simulated_store(tmp_path_factory.mktemp("lifecycle"), users=300, seed=5)


@pytest.fixture
def store_copy(db: str, tmp_path: Path) -> str:
    """A copy of the simulated store, for the tests that write to it."""
    copy = tmp_path / "store.duckdb"
    copy.write_bytes(Path(db).read_bytes())
    return str(copy)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ABEVAL, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ABEVAL_LOCK_TIMEOUT": "0", **(env or {})},
        timeout=300,
    )


def test_the_cli_reads_a_store_a_notebook_holds_open(db: str) -> None:
    with abeval.open(db) as store:
        names = [e.experiment for e in store.experiments()]
        listed = _cli("experiments", "--db", db, "--format", "json")
        assert listed.returncode == 0, listed.stderr
        assert [e["experiment"] for e in json.loads(listed.stdout)] == names == ["home-reco-v2"]
        report = _cli("report", "-e", "home-reco-v2", "--db", db, "--format", "json")
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["experiment"] == "home-reco-v2"
        # and the notebook goes on reading while the CLI has read
        assert store.report("home-reco-v2").experiment == "home-reco-v2"


def test_a_write_while_another_process_reads_fails_with_one_line(
    store_copy: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = tmp_path / "late.csv"
    events.write_text(EVENTS)
    with ExitStack() as stack, abeval.open(store_copy) as store:
        proc = stack.enter_context(holders(store_copy, read_only=True))(30)
        monkeypatch.setenv("ABEVAL_LOCK_TIMEOUT", "0.3")
        with pytest.raises(StoreError) as caught:
            store.ingest(events)
        message = str(caught.value)
        assert "\n" not in message
        assert f"the store {store_copy} is locked by process {proc.pid}; wait for it" in message
        # the failed write left the store readable, and unchanged
        assert [e.experiment for e in store.experiments()] == ["home-reco-v2"]


def test_a_write_waits_for_a_reader_and_then_others_see_it(
    store_copy: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    events = tmp_path / "late.csv"
    events.write_text(EVENTS)
    with ExitStack() as stack, abeval.open(store_copy) as store:
        stack.enter_context(holders(store_copy, read_only=True))(1.0)
        monkeypatch.setenv("ABEVAL_LOCK_TIMEOUT", "60")
        summary = store.ingest(events)
        assert (summary.rows_read, summary.inserted) == (1, 1)
        told = capsys.readouterr().err
        assert told.startswith(f"the store {store_copy} is locked by process ")
        assert "waiting for it (up to 60 s)" in told
        # another process reads the new data while the store is still open here
        listed = _cli("experiments", "--db", store_copy, "--format", "json")
        assert listed.returncode == 0, listed.stderr
        names = sorted(e["experiment"] for e in json.loads(listed.stdout))
        assert names == ["home-reco-v2", "late-one"]
        assert sorted(e.experiment for e in store.experiments()) == names


def test_a_new_store_is_created_at_open_and_written_later(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    events = tmp_path / "late.csv"
    events.write_text(EVENTS)
    with abeval.open(path) as store:
        assert path.is_file()
        assert list(store.experiments()) == []
        # while the store is open here, the CLI reads it, and the migrations are done
        listed = _cli("experiments", "--db", str(path), "--format", "json")
        assert (listed.returncode, json.loads(listed.stdout)) == (0, []), listed.stderr
        assert store.migrate() == []
        store.ingest(events)
        assert [e.experiment for e in store.experiments()] == ["late-one"]


def test_close_closes(db: str) -> None:
    store = abeval.open(db)
    store.close()
    calls: list[Callable[[], object]] = [
        store.experiments,
        store.metrics,
        store.catalog,
        store.sources,
        lambda: store.rejects(),
        lambda: store.report("home-reco-v2"),
        lambda: store.settings("home-reco-v2"),
        lambda: store.set("home-reco-v2", control="control"),
        lambda: store.ingest(Path(db)),
        store.migrate,
    ]
    for call in calls:
        with pytest.raises(StoreClosed) as caught:
            call()
        assert isinstance(caught.value, AbevalError)
        assert str(caught.value) == f"the store {db} is closed; open it again with abeval.open"
    store.close()  # closing again does nothing
    assert repr(store) == f"<abeval store {db} (closed)>"


def test_open_close_open_the_same_file_in_one_process(store_copy: str, tmp_path: Path) -> None:
    events = tmp_path / "late.csv"
    events.write_text(EVENTS)
    first = abeval.open(store_copy, read_only=True)
    assert [e.experiment for e in first.experiments()] == ["home-reco-v2"]
    first.close()
    second = abeval.open(store_copy)
    second.ingest(events)
    second.close()
    third = abeval.open(store_copy)
    assert sorted(e.experiment for e in third.experiments()) == ["home-reco-v2", "late-one"]
    third.close()


def test_the_context_manager_closes(db: str) -> None:
    with abeval.open(db) as store:
        assert [e.experiment for e in store.experiments()] == ["home-reco-v2"]
    with pytest.raises(StoreClosed):
        store.experiments()
    # a writer elsewhere can have the file now
    wrote = subprocess.run(
        [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()", db],
        capture_output=True,
        text=True,
        check=False,
    )
    assert wrote.returncode == 0, wrote.stderr


def test_two_stores_of_one_file_in_one_process_both_read(store_copy: str, tmp_path: Path) -> None:
    events = tmp_path / "late.csv"
    events.write_text(EVENTS)
    first = abeval.open(store_copy)
    second = abeval.open(store_copy)
    third = abeval.open(store_copy, read_only=True)
    try:
        names = ["home-reco-v2"]
        for store in (first, second, third):
            assert [e.experiment for e in store.experiments()] == names
        reports = [s.report("home-reco-v2", offline=False, ope=False) for s in (first, second)]
        # the same sums (DuckDB's parallel sums of floats may differ in the last bits)
        metrics = [r.to_dict()["metrics"] for r in reports]
        assert [m["metric"] for m in metrics[0]] == [m["metric"] for m in metrics[1]]
        for side in ("control", "treatment"):
            sums = [[m[side]["value"] for m in ms] for ms in metrics]
            assert sums[0] == pytest.approx(sums[1], rel=1e-9)
        # A write through one while another reads: one line naming the store and
        # the fix, nothing written, and both still read.
        with pytest.raises(StoreHeldHere) as caught:
            second.ingest(events)
        assert isinstance(caught.value, StoreError)
        assert str(caught.value) == (
            f"cannot write the store {store_copy}: another abeval.open of it in this process "
            "holds it for reading (DuckDB lets one process read a file or write it, not both); "
            "close that store (store.close()) first"
        )
        for store in (first, second, third):
            assert [e.experiment for e in store.experiments()] == names
        # Closing one leaves the others reading (they share DuckDB's database of
        # the file, and its spill folder); once only one is open, it writes.
        third.close()
        assert [e.experiment for e in first.experiments()] == names
        second.close()
        assert first.ingest(events).inserted == 1
        assert sorted(e.experiment for e in first.experiments()) == [*names, "late-one"]
    finally:
        for store in (first, second, third):
            store.close()


def test_two_stores_of_one_file_share_its_spill_folder_until_the_last_closes(
    store_copy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import text

    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("ABEVAL_TEMP_DIR", str(spill))
    monkeypatch.setenv("ABEVAL_MEMORY_LIMIT", "128MiB")
    # Sorting 2M strings of 32 bytes (64 MB of text alone) does not fit in 128 MiB.
    sort = "SELECT count(*) FROM (SELECT md5(i::VARCHAR) s FROM range(2000000) t(i) ORDER BY s)"
    first = abeval.open(store_copy, read_only=True)
    second = abeval.open(store_copy, read_only=True)
    try:
        for store in (first, second):
            with store._store.connect() as conn:
                assert conn.execute(text(sort)).scalar() == 2_000_000
        assert len(list(spill.iterdir())) == 1  # one folder, spilled into by both
        first.close()
        with second._store.connect() as conn:  # still there for the other
            assert conn.execute(text(sort)).scalar() == 2_000_000
    finally:
        first.close()
        second.close()
    assert list(spill.iterdir()) == []
