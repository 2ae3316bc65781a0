"""Signals honoured while waiting for the store's lock (issue 38, item 7):
``abeval metrics add`` (a sub-command of a group with its own callback) waiting
for a store another process holds stops at SIGINT or SIGTERM within a second,
with one line and the shell's code, as ``abeval experiment set`` does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ABEVAL = [sys.executable, "-m", "abeval"]
EVENTS = "experiment,arm,user_id,ts,event_type\n" + "".join(
    f"x,{arm},{arm}{i},2024-05-01T0{j}:00:00,{kind}\n"
    for arm in ("control", "b")
    for i in range(3)
    for j, kind in ((0, "exposure"), (1, "play"))
)
HOLD = (
    "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
    "print('held', flush=True); time.sleep(60)"
)


def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def locked(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "e.csv").write_text(EVENTS)
    (tmp_path / "m.toml").write_text('[plays]\nkind = "mean"\nevent = "play"\n')
    db = tmp_path / "s.duckdb"
    subprocess.run([*ABEVAL, "ingest", str(tmp_path / "e.csv"), "--db", str(db)], check=True)
    return tmp_path, db


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize(
    "command", [["metrics", "add", "m.toml"], ["experiment", "set", "x", "--control", "b"]]
)
def test_a_command_waiting_for_the_lock_stops_at_a_signal(
    locked: tuple[Path, Path], command: list[str], signum: int, code: int
) -> None:
    folder, db = locked
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        proc = subprocess.Popen(
            [*ABEVAL, *command, "--db", str(db)],
            cwd=folder,
            env={**os.environ, "ABEVAL_LOCK_TIMEOUT": "30"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_as_from_a_terminal,
        )
        time.sleep(3)  # started, and waiting for the lock
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == code, err
    assert took < 1.0, took
    assert err.startswith("Interrupted: ") and err.count("\n") == 1, err
