"""One writer at a time on a Spark store (abeval.store.backends.spark.lock).

The lock is a view made by ``CREATE VIEW`` without ``OR REPLACE``: of several
sessions that claim it together exactly one gets it. An ingest that finds it
held waits ``ABEVAL_LOCK_TIMEOUT`` seconds and stops with one line naming the
holder, having written nothing; a lock left by a process of this host that has
ended is taken over; two ingests started together both load, one after the
other, as two ingests (without the lock both took ingest id 1 and the second
commit failed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_tables import drop_abeval_tables
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.store.backends.spark import lock

pytestmark = pytest.mark.spark
runner = CliRunner()


def _session(url: str) -> Any:
    from pyspark.sql.connect.session import SparkSession

    return SparkSession.builder.remote(url).create()


@pytest.fixture
def spark(spark_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The Spark URL with no abeval table and no lock; new tables under ``tmp_path``."""
    drop_abeval_tables(spark_url)
    session = _session(spark_url)
    session.sql(f"DROP VIEW IF EXISTS {lock.LOCK}").collect()
    monkeypatch.setenv("ABEVAL_SPARK_WAREHOUSE", str(tmp_path / "warehouse"))
    try:
        yield spark_url
    finally:
        session.sql(f"DROP VIEW IF EXISTS {lock.LOCK}").collect()
        session.stop()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("lock-files")
    paths = [folder / "a.csv", folder / "b.csv"]
    for seed, (name, path) in enumerate(zip(("exp-a", "exp-b"), paths, strict=True)):
        write_events(SimulationConfig(users=30, seed=seed, days=1, pre_period_days=0), path)
        path.write_text(path.read_text().replace("home-reco-v2", name))
    return paths


def test_of_sessions_claiming_together_exactly_one_gets_the_lock(spark: str) -> None:
    sessions = [_session(spark) for _ in range(4)]
    claims = [lock._me() for _ in sessions]
    got: list[bool] = [False] * len(sessions)
    start = threading.Barrier(len(sessions))

    def claim(i: int) -> None:
        start.wait()
        got[i] = lock.try_claim(sessions[i], claims[i])

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(sessions))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(got) == 1
        winner = got.index(True)
        assert all(lock.holder(s) == claims[winner] for s in sessions)
        for i, s in enumerate(sessions):
            if i != winner:
                lock.release(s, claims[i])  # only the holder's release drops it
        assert lock.holder(sessions[0]) == claims[winner]
        lock.release(sessions[winner], claims[winner])
        assert lock.holder(sessions[0]) is None
    finally:
        for s in sessions:
            s.stop()


def test_an_ingest_waits_then_names_the_holder_and_writes_nothing(
    spark: str, files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ABEVAL_LOCK_TIMEOUT", "2")
    session = _session(spark)
    try:
        with lock.writer_lock(session, spark, timeout=0):
            result = runner.invoke(app, ["ingest", str(files[0]), "--db", spark])
            assert (result.exit_code, result.stdout) == (1, "")
            holder = f"process {os.getpid()} on {socket.gethostname()} (since "
            first, *rest = result.stderr.splitlines()
            assert first.startswith(f"Error: the store {spark} is locked by {holder}")
            assert first.endswith(
                "; wait for it to finish (waited 2 s, set ABEVAL_LOCK_TIMEOUT to wait longer), "
                f"or, if that process has ended, drop the lock with DROP VIEW {lock.LOCK}"
            )
            assert rest == []
            assert not session.catalog.tableExists("events")  # nothing written
        assert lock.holder(session) is None
    finally:
        session.stop()


def test_a_lock_left_by_an_ended_process_of_this_host_is_taken_over(spark: str) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    session = _session(spark)
    try:
        dead = lock.Holder("left", int(ended.stdout), socket.gethostname(), "2026-01-01 00:00:00")
        assert lock.try_claim(session, dead)
        with lock.writer_lock(session, spark, timeout=0):
            mine = lock.holder(session)
            assert mine is not None and mine.pid == os.getpid()
        assert lock.holder(session) is None
    finally:
        session.stop()


def test_two_ingests_started_together_both_load(spark: str, files: list[Path]) -> None:
    env = {**os.environ, "ABEVAL_LOCK_TIMEOUT": "600"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "abeval", "ingest", str(f), "--db", spark, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outs = [r.communicate(timeout=900) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    import json

    ids = sorted(json.loads(o)["files"][0]["ingest_id"] for o, _ in outs)
    assert ids == [1, 2]
    session = _session(spark)
    try:
        parts = {str(r[0]) for r in session.sql("SHOW PARTITIONS events").collect()}
        assert parts == {"ingest_id=1", "ingest_id=2"}
        names = {str(r[0]) for r in session.sql("SELECT experiment FROM experiments").collect()}
        assert names == {"exp-a", "exp-b"}
        assert lock.holder(session) is None
    finally:
        session.stop()
