"""Signals tell the truth (issue 25, item 4): SIGINT and SIGTERM sent at random
moments to every command that writes (ingest, experiment set, source add,
evaluate --experiment), from start-up to exit. Whatever the moment:

- no traceback, and the exit code is 0 (the command finished), 130 or 143;
- the store holds the write exactly when the command said it made it: a
  command that finished printed its result and the store has it; one that was
  stopped printed one ``Interrupted:`` line and the store is as it was.

The default run sends 8 signals (one per command and signal); ``slow`` sends
``ABEVAL_SIGNAL_TRIALS`` per command and signal (default 12: 96 in all). The
campaign's numbers are recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

ABEVAL = [sys.executable, "-m", "abeval"]
SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143)}
ROWS = 150_000


def _as_from_a_terminal() -> None:
    """A test run started in the background passes SIGINT on ignored. And the
    signals are blocked until abeval's handlers are in place (its first lines,
    :func:`abeval.signals.install`): before them only the interpreter runs, which
    no program can make answer a signal otherwise; a signal sent then is delivered
    at that first moment abeval can act on it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _scalar(db: Path, sql: str) -> object:
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(sql).fetchone()
        return row[0] if row else None


@dataclass(frozen=True)
class Writer:
    """A writing command, how to tell from the store whether it wrote, and the
    line it prints when it did."""

    name: str
    args: Callable[[Path], list[str]]
    wrote: Callable[[Path], bool]
    said: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Input files and a template store (one small experiment, ingested)."""
    here = tmp_path_factory.mktemp("campaign")
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT 'big' AS experiment, CASE WHEN i % 2 = 0 THEN 'control' "
            "ELSE 'treatment' END AS arm, 'u' || i AS user_id, "
            "TIMESTAMP '2024-05-01' + to_seconds(i % 86400) AS ts, 'exposure' AS event_type "
            f"FROM range({ROWS}) t(i)) TO '{here / 'big.csv'}' (HEADER)"
        )
        con.execute(
            "COPY (SELECT 'parq' AS experiment, CASE WHEN i % 2 = 0 THEN 'control' "
            "ELSE 'treatment' END AS arm, 'u' || i AS user_id, "
            "TIMESTAMP '2024-05-01' AS ts, 'exposure' AS event_type "
            f"FROM range(1000) t(i)) TO '{here / 'src.parquet'}' (FORMAT PARQUET)"
        )
        con.execute(
            "COPY (SELECT 'u' || (i // 3) AS user_id, 'i' || (i * 7 % 5000) AS item_id "
            f"FROM range(60000) t(i)) TO '{here / 'truth.csv'}' (HEADER)"
        )
        for arm, shift in (("control", 0), ("treatment", 1)):
            con.execute(
                "COPY (SELECT 'u' || (i // 10) AS user_id, "
                f"'i' || ((i * 7 + {shift}) % 5000) AS item_id, i % 10 + 1 AS rank "
                f"FROM range(200000) t(i)) TO '{here / f'{arm}.csv'}' (HEADER)"
            )
    (here / "small.csv").write_text(
        "experiment,arm,user_id,ts,event_type\n"
        + "".join(
            f"small,{a},{a}{i},2024-05-01,exposure\n" for a in ("control", "t") for i in range(50)
        )
    )
    template = here / "template.duckdb"
    subprocess.run(
        [*ABEVAL, "ingest", str(here / "small.csv"), "--db", str(template), "-q"], check=True
    )
    return here, template


def writers(here: Path) -> list[Writer]:
    return [
        Writer(
            "ingest",
            lambda db: ["ingest", str(here / "big.csv"), "--db", str(db)],
            lambda db: _scalar(db, "SELECT count(*) FROM events WHERE experiment = 'big'") == ROWS,
            f"{here / 'big.csv'}: {ROWS:,} rows read: {ROWS:,} inserted",
        ),
        Writer(
            "experiment set",
            lambda db: ["experiment", "set", "small", "--control", "t", "--db", str(db)],
            lambda db: _scalar(db, "SELECT control_arm FROM experiments") == "t",
            "small: control t",
        ),
        Writer(
            "source add",
            lambda db: [
                "source",
                "add",
                "s",
                "--table",
                str(here / "src.parquet"),
                "--db",
                str(db),
            ],
            lambda db: _scalar(db, "SELECT count(*) FROM sources") == 1,
            "added source 's'",
        ),
        Writer(
            "evaluate --experiment",
            lambda db: [
                "evaluate",
                "-t",
                str(here / "truth.csv"),
                "-r",
                f"control={here / 'control.csv'}",
                "-r",
                f"t={here / 'treatment.csv'}",
                "--experiment",
                "small",
                "--db",
                str(db),
                "--format",
                "json",
                "-m",
                "ndcg@10,recall@10",
            ],
            lambda db: _scalar(db, "SELECT count(*) FROM offline_evaluations") > 0,  # type: ignore[operator]
            "recorded evaluation",
        ),
    ]


def _seconds(args: list[str]) -> float:
    start = time.monotonic()
    subprocess.run([*ABEVAL, *args], check=True, capture_output=True)
    return time.monotonic() - start


@dataclass
class Tally:
    trials: int = 0
    finished: int = 0
    stopped: int = 0
    tracebacks: int = 0
    killed_after_saying: int = 0  # died by the signal after its "Interrupted" line
    #: Ingest trials, and the file rows they accounted for: all stored and said
    #: inserted, or none stored and the file said not loaded.
    ingest_rows: int = 0
    ingest_rows_accounted: int = 0


def campaign(world: tuple[Path, Path], tmp_path: Path, per_signal: int, seed: int) -> Tally:
    here, template = world
    rng = random.Random(seed)
    tally = Tally()
    for w in writers(here):
        timing = tmp_path / f"timing-{w.name.replace(' ', '_')}.duckdb"
        shutil.copy(template, timing)
        duration = _seconds(w.args(timing))
        for label, (signum, code) in SIGNALS.items():
            for trial in range(per_signal):
                db = tmp_path / f"{w.name.replace(' ', '_')}-{label}-{trial}.duckdb"
                shutil.copy(template, db)
                delay = rng.uniform(0, duration * 1.1)
                proc = subprocess.Popen(
                    [*ABEVAL, *w.args(db)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    preexec_fn=_as_from_a_terminal,
                )
                time.sleep(delay)
                proc.send_signal(signum)
                out, err = proc.communicate(timeout=300)
                tally.trials += 1
                case = f"{w.name} {label} after {delay:.3f} s: exit {proc.returncode}\n{err}"
                tally.tracebacks += "Traceback" in err or "nanobind" in err
                assert "Traceback" not in err and "nanobind" not in err, case
                # No death by the signal itself: before the command starts the handler
                # exits at once, and after a signal the process ends without the
                # interpreter's shutdown (abeval.signals.exit_after).
                tally.killed_after_saying += proc.returncode == -signum
                assert proc.returncode in (0, code), case
                wrote = w.wrote(db)
                if proc.returncode == 0:
                    tally.finished += 1
                    assert wrote and w.said in err + out, case
                else:
                    tally.stopped += 1
                    assert not wrote, case
                    assert err.startswith("Interrupted: ") and err.count("\n") <= 2, case
                if w.name == "ingest":
                    stored = _scalar(db, "SELECT count(*) FROM events WHERE experiment = 'big'")
                    tally.ingest_rows += ROWS
                    done = proc.returncode == 0 and stored == ROWS and w.said in err
                    kept_out = proc.returncode != 0 and stored == 0
                    tally.ingest_rows_accounted += ROWS if done or kept_out else 0
    return tally


@pytest.mark.slow
def test_signals_at_random_moments_tell_the_truth(world: tuple[Path, Path], tmp_path: Path) -> None:
    tally = campaign(world, tmp_path, per_signal=1, seed=25)
    assert tally.trials == 8 and tally.tracebacks == 0
    assert tally.ingest_rows_accounted == tally.ingest_rows
    print(f"\ncampaign: {tally}")


@pytest.mark.slow
def test_the_signal_campaign(world: tuple[Path, Path], tmp_path: Path) -> None:
    per_signal = int(os.environ.get("ABEVAL_SIGNAL_TRIALS", "12"))
    tally = campaign(world, tmp_path, per_signal=per_signal, seed=2025)
    assert tally.tracebacks == 0 and tally.stopped > 0
    assert tally.ingest_rows_accounted == tally.ingest_rows
    print(f"\ncampaign: {tally}")
