"""A Spark Connect server of a test's own (local mode, on a free port), to be
killed or frozen without touching the session's cluster (conftest.py).

``catalog="hive"`` keeps the catalog in a Derby metastore under the test's folder,
so that the tables outlive a restart of the server on the same folder.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

#: Seconds the server may take to start (two busy cores).
START_TIMEOUT = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    log: Path, text: str, since: int, proc: subprocess.Popen[bytes], timeout: float
) -> None:
    """Until ``text`` is in ``log`` after offset ``since``; fail the test if the
    server exits or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace")[since:]:
            return
        if proc.poll() is not None:
            pytest.fail(f"the Connect server exited:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"no {text!r} in the server log after {timeout} s")


class ConnectServer:
    """One local-mode Spark Connect server in ``folder`` (warehouse, logs, metastore)."""

    def __init__(self, folder: Path, catalog: str = "in-memory") -> None:
        self.folder = folder
        self.catalog = catalog
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.log = folder / "connect.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ConnectServer:
        import pyspark

        home = Path(pyspark.__file__).parent
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.catalogImplementation": self.catalog,
            "spark.sql.warehouse.dir": str(self.folder / "warehouse"),
            "spark.local.dir": str(self.folder / "local"),
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions": (
                f"-Dderby.system.home={self.folder / 'derby'} -XX:+ExitOnOutOfMemoryError"
            ),
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
        since = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                cwd=self.folder,  # Derby's derby.log
            )
        self.wait_for("Spark Connect server started", since, START_TIMEOUT)
        return self

    def log_size(self) -> int:
        return len(self.log.read_text(errors="replace"))

    def wait_for(self, text: str, since: int, timeout: float) -> None:
        assert self.proc is not None
        wait_for(self.log, text, since, self.proc, timeout)

    def signal(self, signum: int) -> None:
        """``signum`` to the server's JVM (the driver)."""
        assert self.proc is not None
        self.proc.send_signal(signum)

    def stop(self) -> None:
        """Kill the server (and anything it started) and wait for it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None
