"""A local Spark standalone cluster for the tests marked ``spark``.

They run only when selected (``pytest -m spark``, which ``make test-spark`` does);
``make test`` skips them. The cluster (one master, two workers, a Spark Connect
server; scripts/spark/start.sh) starts once for the session on free loopback ports
and stops at the end. ``ABEVAL_SPARK_URL`` names a running Spark Connect server
instead (it must see this machine's files: the tests register Parquet folders).
How long the cluster took to start and the Spark tests to run is printed at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "spark"
_timings: dict[str, float] = {}


def _selected(config: pytest.Config) -> bool:
    expr = str(config.getoption("markexpr") or "")
    return "spark" in expr and "not spark" not in expr


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _selected(config):
        return
    skip = pytest.mark.skip(reason="needs a Spark cluster: run `make test-spark` (pytest -m spark)")
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(skip)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://127.0.0.1:PORT`` of a Spark Connect server attached to a fresh cluster."""
    given = os.environ.get("ABEVAL_SPARK_URL")
    if given:
        yield given
        return
    lab = tmp_path_factory.mktemp("spark-cluster")
    env = {
        **os.environ,
        "LAB": str(lab),
        "PYTHON": sys.executable,
        "MASTER_PORT": str(_free_port()),
        "MASTER_UI": "0",
        "WORKER_UI_BASE": "0",
        "CONNECT_PORT": str(_free_port()),
        "TIMEOUT": os.environ.get("ABEVAL_SPARK_START_TIMEOUT", "300"),
    }
    started = time.monotonic()
    try:
        run = subprocess.run(
            ["bash", str(SCRIPTS / "start.sh")], env=env, capture_output=True, text=True
        )
        _timings["cluster start"] = time.monotonic() - started
        if run.returncode != 0:
            pytest.fail(f"the Spark cluster did not start:\n{run.stdout}{run.stderr}")
        _timings["since ready"] = time.monotonic()
        yield f"sc://127.0.0.1:{env['CONNECT_PORT']}"
    finally:
        done = time.monotonic()
        if "since ready" in _timings:
            _timings["Spark tests"] = done - _timings.pop("since ready")
        subprocess.run(["bash", str(SCRIPTS / "stop.sh")], env=env, capture_output=True)
        _timings["cluster stop"] = time.monotonic() - done


@pytest.fixture
def spark(spark_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The Spark URL, abeval's tables dropped; new ones go under ``tmp_path``
    (a test module may define its own)."""
    from spark_tables import drop_abeval_tables

    drop_abeval_tables(spark_url)
    monkeypatch.setenv("ABEVAL_SPARK_WAREHOUSE", str(tmp_path / "warehouse"))
    yield spark_url


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _timings:
        said = ", ".join(f"{k} {v:.1f} s" for k, v in _timings.items())
        terminalreporter.write_line(f"spark: {said}")
