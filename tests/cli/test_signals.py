"""Ctrl-C and SIGTERM during ``abeval ingest``: one line, the shell's exit code
for that signal, and nothing from the file in the store."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

ABEVAL = [sys.executable, "-m", "abeval"]


def _events(path: Path, rows: int) -> None:
    """A valid event file of ``rows`` exposures, written by DuckDB in a moment."""
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT 'exp' AS experiment, CASE WHEN i % 2 = 0 THEN 'control' "
            "ELSE 'treatment' END AS arm, 'u' || i AS user_id, "
            "TIMESTAMP '2024-05-01' + to_seconds(i % 86400) AS ts, 'exposure' AS event_type "
            f"FROM range({rows}) t(i)) TO '{path}' (HEADER)"
        )


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
        return con.execute("SELECT count(*) FROM events").fetchone()[0] if "events" in tables else 0


def _seconds(*args: str) -> float:
    start = time.monotonic()
    subprocess.run([*ABEVAL, *args], check=True, capture_output=True)
    return time.monotonic() - start


def _as_from_a_terminal() -> None:
    """Ctrl-C reaches a command started from a terminal; a test run started in the
    background of a script (``cmd &``) passes SIGINT on ignored, and Python then
    never sees it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(db: Path, proc: subprocess.Popen[str]) -> None:
    """Until ``db`` exists (or the process ended, or a minute passed)."""
    deadline = time.monotonic() + 60
    while not db.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float, float]:
    """The file, how long abeval takes to start, and how long a whole ingest of the
    file takes on this machine now."""
    folder = tmp_path_factory.mktemp("signals")
    path = folder / "events.csv"
    _events(path, 1_500_000)
    start = max(_seconds("--version"), _seconds("--version"))
    return path, start, _seconds("ingest", str(path), "--db", str(folder / "timing.duckdb"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_during_ingest_says_so_and_loads_nothing(
    big: tuple[Path, float, float], tmp_path: Path, signum: int, code: int
) -> None:
    path, start, seconds = big
    stopped = 0
    # Moments counted from when the store's file appears (the command has started
    # and is opening the store), so a faster ingest or a slower start-up cannot
    # leave every signal too late; the first comes at once.
    for share in (0.0, 0.1, 0.3, 0.5):
        db = tmp_path / f"store-{share}.duckdb"
        proc = subprocess.Popen(
            [*ABEVAL, "ingest", str(path), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_as_from_a_terminal,
        )
        _wait_for(db, proc)
        time.sleep((seconds - start) * share)  # during the load
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        if proc.returncode == 0 or "rows read" in err or "all was loaded" in err:
            # It finished first (the signal may still end the process on its way out,
            # or come between the commit and the summary, which then says so).
            assert err.endswith(("/s)\n", "Interrupted: all was loaded\n")), err
            assert _stored(db) == 1_500_000
            continue
        stopped += 1
        # The shell's status for a death by the signal: 128 + N, either as our exit
        # code or as the death itself (Popen's -N), when the signal is seen a second
        # time on the way out after the message was written.
        assert proc.returncode in (code, -signum), err
        assert err == f"Interrupted: nothing from {path} was loaded\n"
        assert out == ""
        assert _stored(db) == 0
    assert stopped, "no signal arrived before the ingest ended"
