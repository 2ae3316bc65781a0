"""What the benchmarks share: one measured subprocess, and the machine it ran on.

- :func:`run_measured` runs a command in its own process and returns its exit code,
  wall time, peak resident memory (the child's own, from ``wait4``) and output.
- :func:`machine` describes the machine and the versions a result depends on;
  :func:`describe` puts that on one line for ``RESULTS.md``; :func:`publish`
  prints a result and appends it there.

The benchmark scripts import this module from the ``benchmarks`` folder; it
imports nothing heavy, so a child's peak RSS is not inflated by the launcher's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def code_copy(text: str) -> Path:
    """An argparse ``type`` for ``--before``: a folder holding a copy of abeval's code
    (``git archive COMMIT | tar -x -C DIR``). Anything else is argparse's one-line
    error before a store is built or a cluster started."""
    import argparse

    path = Path(text)
    if not (path / "abeval" / "__main__.py").is_file():
        raise argparse.ArgumentTypeError(
            f"{text} holds no copy of abeval's code (make one with: "
            f"mkdir -p {text} && git archive COMMIT | tar -x -C {text})"
        )
    return path


@dataclass(frozen=True)
class Measured:
    """One finished (or killed) subprocess."""

    code: int
    seconds: float
    rss_mib: float
    out: str
    err: str
    timed_out: bool = False
    watched_mib: float = 0.0  # the most the watched folder held while it ran


def run_measured(
    argv: Sequence[str],
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    watch: Path | None = None,
) -> Measured:
    """Run ``argv`` (with ``env`` added to the environment); wall seconds, the child's
    own peak RSS (``wait4``) and its output. A child still running after ``timeout``
    seconds is killed (``timed_out``). With ``watch``, the size of that folder (a
    spill folder) is sampled every 0.2 s and its largest value kept."""
    environ = {**os.environ, **env} if env else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, stdout=out, stderr=err, env=environ)
        timed_out, watched, next_look = False, 0, 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            if now - t0 > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            if watch is not None and now >= next_look:
                watched, next_look = max(watched, folder_bytes(watch)), now + 0.2
            time.sleep(0.005)
        seconds = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: KiB on Linux
        return Measured(
            code=os.waitstatus_to_exitcode(status),
            seconds=seconds,
            rss_mib=usage.ru_maxrss * scale / 2**20,
            out=out.read().decode(errors="replace"),
            err=err.read().decode(errors="replace"),
            timed_out=timed_out,
            watched_mib=watched / 2**20,
        )


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 when it does not exist); files that
    vanish while it looks are skipped."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_size
    return total


def machine(packages: Sequence[str] = ("duckdb",)) -> dict[str, str]:
    """The date, CPU, cores, RAM, OS, Python, the versions of ``packages`` (those
    installed) and the git commit."""
    cpu, ram = platform.processor() or platform.machine(), "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except OSError:
        pass
    info = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "ram": ram,
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    for name in packages:
        with contextlib.suppress(PackageNotFoundError):
            info[name] = version({"pytrec_eval": "pytrec-eval-terrier"}.get(name, name))
    try:
        info["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = "?"
    return info


def describe(info: dict[str, str]) -> str:
    """``machine()`` on one line, without the date."""
    return ", ".join(f"{k} {v}" for k, v in info.items() if k != "date")


def publish(lines: Sequence[str], record: bool) -> None:
    """Print a result's lines; with ``record``, also append them to ``RESULTS.md``."""
    text = "\n".join(lines) + "\n"
    print(text)
    if record:
        with (REPO / "benchmarks" / "RESULTS.md").open("a") as f:
            f.write("\n" + text)
