"""The benchmarks' ``--sizes`` (``bench_report.py --growth``): one parser
(gen_events.parse_sizes), and a bad size is argparse's one-line error naming the
option, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from gen_events import parse_sizes  # noqa: E402


def test_sizes_are_read_with_their_units() -> None:
    assert parse_sizes("1M,250k, 5000,") == [1_000_000, 250_000, 5000]


@pytest.mark.parametrize(
    ("script", "option"),
    [
        ("bench_spark", "--sizes"),
        ("bench_postgres", "--sizes"),
        ("bench_ingest", "--sizes"),
        ("gen_events", "--sizes"),
        ("bench_report", "--growth"),
    ],
)
def test_a_bad_size_is_one_line(script: str, option: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{script}.py"), option, "1M,garbage"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert (
        last
        == f"{script}.py: error: argument {option}: not a size: 'garbage' (e.g. 1M, 250k, 5000)"
    )
    assert done.stdout == ""
