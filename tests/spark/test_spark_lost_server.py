"""The Spark Connect server dying in the middle of a report: one line naming the
store within 60 s, never a hang (issue 23, item 5).

The test starts a Connect server of its own (local mode, an in-memory catalog,
on a free port), so that killing it leaves the session's cluster to the other
tests; a small DuckDB store's tables are registered in it as Parquet
(spark_tables.py). ``abeval report`` runs against it in a subprocess; once the
server log shows a job of the report, the server's JVM is killed (SIGKILL: no
goodbye to the client). pyspark's default retries would wait about 10 minutes;
abeval's (abeval.store.spark.store.LOST_SERVER_RETRIES) about 30 s.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_tables import export_tables, register_tables

from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.ingest import ingest_file

pytestmark = pytest.mark.spark
#: Seconds the server may take to start (two busy cores).
START_TIMEOUT = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(log: Path, text: str, since: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace")[since:]:
            return
        if proc.poll() is not None:
            pytest.fail(f"the Connect server exited:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"no {text!r} in the server log after {timeout} s")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """(URL, process, log) of a local-mode Spark Connect server; killed at the end."""
    import pyspark

    home = Path(pyspark.__file__).parent
    port = _free_port()
    log = tmp_path / "connect.log"
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
        "spark.local.dir": str(tmp_path / "local"),
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
    }
    command = [
        str(home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[1]",
        "--driver-memory",
        "1g",
        *(x for k, v in conf.items() for x in ("--conf", f"{k}={v}")),
    ]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        _wait(log, "Spark Connect server started", 0, proc, START_TIMEOUT)
        yield f"sc://127.0.0.1:{port}", proc, log
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_server_killed_mid_report_is_one_line_within_60_s(
    server: tuple[str, subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    from pyspark.sql.connect.session import SparkSession

    url, proc, log = server
    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=300, seed=2, days=3, pre_period_days=0), events)
    duck = tmp_path / "s.duckdb"
    with open_store(str(duck)) as store:
        ingest_file(store, events)
    folders = export_tables(duck, tmp_path / "tables", "default")
    session = SparkSession.builder.remote(url).create()
    register_tables(session, "default", folders)
    session.stop()
    since = len(log.read_text(errors="replace"))
    report = subprocess.Popen(
        [sys.executable, "-m", "abeval", "report", "-e", "home-reco-v2", "--db", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        _wait(log, "Starting job", since, proc, 180)  # the report's first job runs
        assert report.poll() is None
        proc.send_signal(signal.SIGKILL)  # the driver dies mid-job
        killed = time.monotonic()
        out, err = report.communicate(timeout=120)
        waited = time.monotonic() - killed
    finally:
        if report.poll() is None:
            report.kill()
    assert waited < 60, waited
    assert (report.returncode, out) == (1, "")
    assert err.splitlines() == [
        f"Error: the store {url} stopped answering: its Spark Connect server is gone (the "
        "driver stopped, or its machine); start it again and run the command again"
    ]
    print(f"lost server: the report stopped {waited:.1f} s after the kill")
