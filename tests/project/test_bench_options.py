"""The benchmarks' options a user gets wrong: ``--sizes`` (``bench_report.py
--growth``), one parser (gen_events.parse_sizes), and ``--before``, a copy of the
code (measure.code_copy). A bad one is argparse's one-line error naming the option,
before any store is built or cluster started, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from gen_events import parse_sizes  # noqa: E402
from measure import code_copy  # noqa: E402

BEFORE = [
    "bench_beyond",
    "bench_evaluate",
    "bench_online",
    "bench_ope_section",
    "bench_replay_parts",
    "bench_report",
    "bench_spark",
    "bench_startup",
]


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


def test_a_copy_of_the_code_is_a_folder_with_abeval_in_it(tmp_path: Path) -> None:
    (tmp_path / "abeval").mkdir()
    (tmp_path / "abeval" / "__main__.py").write_text("")
    assert code_copy(str(tmp_path)) == tmp_path


@pytest.mark.parametrize("script", BEFORE)
def test_a_folder_without_the_code_is_one_line(script: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{script}.py"), "--before", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"{script}.py: error: argument --before: {empty} holds no copy of abeval's code "
        f"(make one with: mkdir -p {empty} && git archive COMMIT | tar -x -C {empty})"
    )
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == [empty]  # nothing written beside it
