"""The Spark Connect server's driver dying or freezing in the middle of a job:
one line naming the store within 60 s, never a hang, nothing half-written
(issue 23, item 5).

Each test starts a Connect server of its own (local mode, on a free port;
connect_server.py), so that killing it leaves the session's cluster to the other
tests. abeval runs in a subprocess; once the server log shows a job of the
command, the server's JVM (the driver) is killed (SIGKILL: no goodbye to the
client) or frozen (SIGSTOP: the connection stays open and nothing answers, as
when its machine is lost). pyspark's defaults would wait about 10 minutes for a
killed server and, for a frozen one, about 80 s before retrying for as long;
abeval's settings (abeval.store.backends.spark.database.LOST_SERVER_RETRIES, KEEPALIVE) give
up within about 40 s.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from connect_server import ConnectServer
from spark_tables import export_tables, register_tables

from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.spark


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ConnectServer]:
    """A local-mode Connect server with an in-memory catalog; killed at the end."""
    started = ConnectServer(tmp_path)
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture
def hive_server(tmp_path: Path) -> Iterator[ConnectServer]:
    """A local-mode Connect server whose catalog outlives a restart; killed at the end."""
    (tmp_path / "hive").mkdir()
    started = ConnectServer(tmp_path / "hive", catalog="hive")
    try:
        yield started.start()
    finally:
        started.stop()


def _lost(url: str) -> list[str]:
    return [
        f"Error: the store {url} stopped answering: its Spark Connect server is gone (the "
        "driver stopped, or its machine); start it again and run the command again"
    ]


def _stopped_within(
    server: ConnectServer, command: list[str], signum: int, cwd: Path
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``abeval COMMAND`` and send ``signum`` to the server's driver at the
    command's first job; return what the command did and how many seconds after
    the signal it exited."""
    since = server.log_size()
    run = subprocess.Popen(
        [sys.executable, "-m", "abeval", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    try:
        server.wait_for("Starting job", since, 180)  # a job of the command runs
        assert run.poll() is None
        server.signal(signum)
        sent = time.monotonic()
        out, err = run.communicate(timeout=120)
        waited = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return subprocess.CompletedProcess(run.args, run.returncode, out, err), waited


def _report_store(server: ConnectServer, tmp_path: Path) -> None:
    """A small DuckDB store's tables registered in ``server`` as Parquet."""
    from pyspark.sql.connect.session import SparkSession

    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=300, seed=2, days=3, pre_period_days=0), events)
    duck = tmp_path / "s.duckdb"
    with open_store(str(duck)) as store:
        ingest_file(store, events)
    folders = export_tables(duck, tmp_path / "tables", "default")
    session = SparkSession.builder.remote(server.url).create()
    register_tables(session, "default", folders)
    session.stop()


def test_a_server_killed_mid_report_is_one_line_within_60_s(
    server: ConnectServer, tmp_path: Path
) -> None:
    _report_store(server, tmp_path)
    report = ["report", "-e", "home-reco-v2", "--db", server.url, "-o", "r.html"]
    done, waited = _stopped_within(server, report, signal.SIGKILL, tmp_path)
    assert waited < 60, waited
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == _lost(server.url)
    assert not (tmp_path / "r.html").exists()
    print(f"killed server: the report stopped {waited:.1f} s after the kill")


def test_a_frozen_driver_mid_report_is_one_line_within_60_s(
    server: ConnectServer, tmp_path: Path
) -> None:
    """SIGSTOP: the server's socket stays open and nothing answers (a machine lost
    without a goodbye); only keepalive pings tell."""
    _report_store(server, tmp_path)
    report = ["report", "-e", "home-reco-v2", "--db", server.url, "-o", "r.html"]
    done, waited = _stopped_within(server, report, signal.SIGSTOP, tmp_path)
    server.signal(signal.SIGCONT)
    assert waited < 60, waited
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == _lost(server.url)
    assert not (tmp_path / "r.html").exists()
    print(f"frozen driver: the report stopped {waited:.1f} s after SIGSTOP")


def _count(url: str) -> int | None:
    """Rows of ``events`` on the server of ``url`` (None: no such table)."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        if not session.catalog.tableExists("events"):
            return None
        return int(session.sql("SELECT count(*) FROM events").collect()[0][0])
    finally:
        session.stop()


def test_a_driver_killed_mid_ingest_leaves_nothing_half_written(
    hive_server: ConnectServer, tmp_path: Path
) -> None:
    """The ingest is killed at its first job on the cluster; after a restart the
    store holds none of the file's rows (or all of them, had the commit been
    reached), and the same ingest run again loads every row once."""
    events = tmp_path / "events.csv"
    rows = write_events(SimulationConfig(users=3000, seed=2, days=3, pre_period_days=0), events)
    ingest = ["ingest", "--db", hive_server.url, str(events)]
    done, waited = _stopped_within(hive_server, ingest, signal.SIGKILL, tmp_path)
    assert waited < 60, waited
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == _lost(hive_server.url)
    hive_server.stop()
    hive_server.start()
    assert _count(hive_server.url) in (None, 0, rows)
    again = subprocess.run(
        [sys.executable, "-m", "abeval", *ingest], capture_output=True, text=True, cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert _count(hive_server.url) == rows
    print(f"killed mid-ingest: stopped {waited:.1f} s after the kill")
