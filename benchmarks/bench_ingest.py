"""Ingest benchmark: ``abeval ingest`` against DuckDB's own CSV reader, same files, same run.

For each event file (default ``benchmarks/data/events_1M.csv`` and ``_10M.csv``,
generated with ``gen_events.py`` when missing) and each of ``--runs`` rounds, two
subprocesses load the file into a fresh DuckDB *file*, in alternating order:

* ``abeval``: ``python -m abeval ingest FILE --db fresh.duckdb --json --quiet``
  (validation, deduplication, bookkeeping: the whole command);
* ``duckdb``: ``CREATE TABLE t AS SELECT * FROM read_csv('FILE')`` in a new
  Python process: the floor the ingest is compared with.

Reported per file: median (and min) wall time of each, the ratio abeval / duckdb
of the medians and the median of the ratios within each round (the two loads of
a round run back to back, so a shared machine's load changes less between
them), the median CPU seconds of each process (user + system, which the load
changes less than wall time), the median peak RSS of each process (from
``wait4``), rows per second, and the load average while it ran. The
table is printed as Markdown; ``--record`` appends it, with a description of
the machine, to ``benchmarks/RESULTS.md``. The file is read once before timing
so that both sides see a warm page cache.

    python benchmarks/bench_ingest.py                       # 1M and 10M, 3 runs
    python benchmarks/bench_ingest.py --sizes 1M --runs 5 --record
    python benchmarks/bench_ingest.py --files my.csv --only duckdb
    python benchmarks/bench_ingest.py --files my.csv --profile   # every statement timed
    python benchmarks/bench_ingest.py --sizes 2M --before /tmp/main  # old code beside new

``--before DIR`` adds a third side, ``before``: the same command run from a copy of
abeval's code in DIR (``git archive COMMIT | tar -x -C DIR``), alternated with the
other two within each round, so that a change is measured against the code before it
under the same load. ``--nice N`` runs every side under ``nice -n N``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "RESULTS.md"
IS_MAC = sys.platform == "darwin"
sys.path.insert(0, str(HERE))

# gen_events imports the simulator only when it generates: this process stays small,
# which matters because a child's peak RSS (from wait4) counts the process it was
# forked from. Missing files are generated in a subprocess for the same reason.
from gen_events import DATA_DIR, DEFAULT_SIZES, data_path, parse_sizes  # noqa: E402
from measure import code_copy, describe, machine, run_measured  # noqa: E402

METHODS = ("abeval", "duckdb")
BEFORE = "before"  # the --before side: the same command from another copy of the code

# The floor: DuckDB's reader into a table of a fresh database file, in its own process.
RAW_DUCKDB = """
import sys, time, json, duckdb
path, db = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
con = duckdb.connect(db)
con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [path])
rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
con.close()
print(json.dumps({"rows": rows, "seconds": time.perf_counter() - t0}))
"""


# ``--profile``: one ingest with every statement timed. The direct load runs its
# statements on DuckDB's own connection, the rest go through SQLAlchemy's cursor:
# both wrappers of duckdb_engine are timed. CPU is the process's (DuckDB's threads
# and the checksum thread included), so it is given beside wall time.
PROFILE = """
import json, resource, sys, time
import duckdb_engine

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def hwm():
    with open("/proc/self/status") as f:
        return next((int(l.split()[1]) / 1024 for l in f if l.startswith("VmHWM")), 0.0)

log = []

def timed(run):
    def execute(self, sql, *args, **kwargs):
        t, c = time.perf_counter(), cpu()
        try:
            return run(self, sql, *args, **kwargs)
        finally:
            log.append([time.perf_counter() - t, cpu() - c, hwm(), " ".join(str(sql).split())])
    return execute

wrapper = duckdb_engine.ConnectionWrapper
wrapper.execute = timed(lambda self, *a, **k: wrapper.__getattr__(self, "execute")(*a, **k))
duckdb_engine.CursorWrapper.execute = timed(duckdb_engine.CursorWrapper.execute)

from abeval.cli import app
t0, c0 = time.perf_counter(), cpu()
try:
    app(sys.argv[2:], standalone_mode=False)
finally:
    doc = {"wall": time.perf_counter() - t0, "cpu": cpu() - c0, "hwm": hwm(), "statements": log}
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f)
"""


@dataclass
class Run:
    method: str
    seconds: float
    peak_rss_mib: float
    rows: int | None
    ok: bool
    message: str = ""
    round: int = 0
    cpu_seconds: float = 0.0
    load: float = 0.0  # the 1-minute load average when it started


@dataclass
class FileResult:
    path: Path
    rows: int | None
    size_bytes: int
    runs: list[Run] = field(default_factory=list)

    def of(self, method: str) -> list[Run]:
        return [r for r in self.runs if r.method == method and r.ok]

    def median(self, method: str) -> float | None:
        runs = self.of(method)
        return statistics.median(r.seconds for r in runs) if runs else None

    def minimum(self, method: str) -> float | None:
        runs = self.of(method)
        return min(r.seconds for r in runs) if runs else None

    def rss(self, method: str) -> float | None:
        runs = self.of(method)
        return statistics.median(r.peak_rss_mib for r in runs) if runs else None

    def failures(self, method: str) -> list[Run]:
        return [r for r in self.runs if r.method == method and not r.ok]

    def cpu(self, method: str) -> float | None:
        runs = self.of(method)
        return statistics.median(r.cpu_seconds for r in runs) if runs else None

    def paired_ratio(self, method: str = "abeval", cpu: bool = False) -> float | None:
        """The median over rounds of ``method``'s time (CPU seconds with ``cpu``)
        over duckdb's in the same round."""

        def took(r: Run) -> float:
            return r.cpu_seconds if cpu else r.seconds

        a = {r.round: took(r) for r in self.of(method)}
        d = {r.round: took(r) for r in self.of("duckdb")}
        ratios = [a[i] / d[i] for i in a if i in d and d[i] > 0]
        return statistics.median(ratios) if ratios else None

    def loads(self) -> tuple[float, float, float] | None:
        loads = [r.load for r in self.runs]
        return (min(loads), statistics.median(loads), max(loads)) if loads else None


def _find_rows(doc: Any) -> int | None:
    """Rows inserted, from ``abeval ingest --json`` output (tolerant of its shape)."""
    if isinstance(doc, dict):
        for key in ("inserted", "rows_inserted"):
            if isinstance(doc.get(key), int):
                return int(doc[key])
        if isinstance(doc.get("files"), list):
            counts = [_find_rows(f) for f in doc["files"]]
            if counts and all(c is not None for c in counts):
                return sum(c for c in counts if c is not None)
    if isinstance(doc, list):
        counts = [_find_rows(f) for f in doc]
        if counts and all(c is not None for c in counts):
            return sum(c for c in counts if c is not None)
    return None


class Bench:
    def __init__(
        self,
        python: str,
        timeout: float,
        work_dir: Path,
        before: Path | None = None,
        nice: int = 0,
    ) -> None:
        self.python = python
        self.timeout = timeout
        self.work_dir = work_dir
        self.abeval_flags = ["--json", "--quiet"]
        self.before = before
        self.prefix = ["nice", "-n", str(nice)] if nice else []

    def once(self, method: str, path: Path) -> Run:
        tmp = Path(tempfile.mkdtemp(prefix="bench-", dir=self.work_dir))
        db = tmp / "fresh.duckdb"
        try:
            if method == "duckdb":
                argv = [self.python, "-c", RAW_DUCKDB, str(path), str(db)]
            else:
                argv = [self.python, "-m", "abeval", "ingest", str(path), "--db", str(db)]
                argv += self.abeval_flags
            # `-m abeval` finds the checkout (or the --before copy) even without an install
            code = self.before if method == BEFORE and self.before else REPO
            env = {"PYTHONPATH": str(code.resolve())} if code != REPO else None
            load = os.getloadavg()[0]
            before = os.times()
            m = run_measured([*self.prefix, *argv], self.timeout, cwd=code, env=env)
            after = os.times()
            cpu = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            code, seconds, rss, out, err = m.code, m.seconds, m.rss_mib, m.out, m.err
            if method != "duckdb" and code == 2 and "--quiet" in err and self.abeval_flags:
                self.abeval_flags = ["--json"]  # an older ingest without --quiet
                return self.once(method, path)
            if code != 0:
                lines = (err or out).strip().splitlines()
                why = lines[-1] if lines else f"exit code {code}"
                return Run(
                    method, seconds, rss, None, False, f"exit {code}: {why[:200]}", 0, cpu, load
                )
            try:
                doc = json.loads(out)
                rows = doc["rows"] if method == "duckdb" else _find_rows(doc)
            except (ValueError, KeyError, TypeError):
                rows = None
            return Run(method, seconds, rss, rows, True, "", 0, cpu, load)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def warm(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def bench_file(bench: Bench, path: Path, runs: int, methods: tuple[str, ...]) -> FileResult:
    meta_path = path.with_name(path.name + ".json")
    rows = json.loads(meta_path.read_text()).get("rows") if meta_path.exists() else None
    result = FileResult(path, rows, path.stat().st_size)
    warm(path)
    for i in range(runs):
        order = methods if i % 2 == 0 else tuple(reversed(methods))
        for method in order:
            run = bench.once(method, path)
            run.round = i
            result.runs.append(run)
            status = (
                f"{run.seconds:7.2f} s  {run.cpu_seconds:7.2f} s CPU  {run.peak_rss_mib:7.0f} MiB  "
                f"load {run.load:.1f}"
                if run.ok
                else run.message
            )
            print(f"  run {i + 1}/{runs} {method:<7} {status}", file=sys.stderr, flush=True)
            if run.ok and rows is not None and run.rows is not None and run.rows != rows:
                print(
                    f"  warning: {method} loaded {run.rows:,} rows, file has {rows:,}",
                    file=sys.stderr,
                )
    return result


def _fmt(x: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "failed" if x is None else f"{x:{spec}}{unit}"


def markdown(results: list[FileResult], runs: int) -> str:
    return _main_table(results, runs) + _before_table(results)


def _before_table(results: list[FileResult]) -> str:
    """With ``--before``: each abeval side against duckdb's CTAS by wall and CPU
    seconds, the medians and the median of the within-round ratios."""
    if not any(r.of(BEFORE) for r in results):
        return ""
    lines = [
        "",
        "| file | code | wall s (median) | CPU s (median) | wall ratio within rounds "
        "| CPU ratio within rounds | peak RSS |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for method in (BEFORE, "abeval", "duckdb"):
            if not r.of(method):
                continue
            shown = {"abeval": "after", "duckdb": "duckdb CTAS"}.get(method, method)
            ratios = (
                ("1", "1")
                if method == "duckdb"
                else (
                    _fmt(r.paired_ratio(method), ".2f", "x"),
                    _fmt(r.paired_ratio(method, True), ".2f", "x"),
                )
            )
            lines.append(
                f"| {r.path.name} | {shown} | {_fmt(r.median(method))} | {_fmt(r.cpu(method))} "
                f"| {ratios[0]} | {ratios[1]} | {_fmt(r.rss(method), ',.0f', ' MiB')} |"
            )
    return "\n".join(lines) + "\n"


def _main_table(results: list[FileResult], runs: int) -> str:
    head = (
        "| file | rows | size | abeval ingest (median / min) | duckdb read_csv (median / min) "
        "| ratio | ratio within rounds | CPU s abeval / duckdb | abeval peak RSS "
        "| duckdb peak RSS | abeval rows/s | load average (min / median / max) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for r in results:
        a, d = r.median("abeval"), r.median("duckdb")
        ratio = f"{a / d:.2f}x" if a and d else "n/a"
        rate = f"{r.rows / a:,.0f}" if a and r.rows else "n/a"
        rows = f"{r.rows:,}" if r.rows else "?"
        paired = r.paired_ratio()
        loads = r.loads()
        cells = [
            r.path.name,
            rows,
            f"{r.size_bytes / 2**20:,.0f} MiB",
            f"{_fmt(a, '.2f', ' s')} / {_fmt(r.minimum('abeval'), '.2f', ' s')}",
            f"{_fmt(d, '.2f', ' s')} / {_fmt(r.minimum('duckdb'), '.2f', ' s')}",
            ratio,
            _fmt(paired, ".2f", "x"),
            f"{_fmt(r.cpu('abeval'))} / {_fmt(r.cpu('duckdb'))}",
            _fmt(r.rss("abeval"), ",.0f", " MiB"),
            _fmt(r.rss("duckdb"), ",.0f", " MiB"),
            rate,
            " / ".join(f"{x:.1f}" for x in loads) if loads else "n/a",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for r in results:
        for method in (*METHODS, BEFORE):
            for run in r.failures(method)[:1]:
                notes.append(f"- {r.path.name}, {method}: {run.message}")
    text = head + "\n".join(lines) + "\n"
    text += f"\n{runs} runs per file and method, interleaved; wall time of the whole subprocess.\n"
    if notes:
        text += "\nFailures:\n" + "\n".join(notes) + "\n"
    return text


def record(text: str, info: dict[str, str], results: Path = RESULTS) -> None:
    header = (
        ""
        if results.exists()
        else "# Benchmark results\n\nAppended by `bench_ingest.py --record`.\n"
    )
    described = describe(info)
    with results.open("a", encoding="utf-8") as f:
        f.write(f"{header}\n## Ingest, {info['date']}\n\n{described}\n\n{text}")


def profile(path: Path, work_dir: Path, python: str, store: Path | None, top: int) -> str:
    """Ingest ``path`` once (into a copy of ``store``, or a fresh store) with every
    statement timed; the statements, slowest first, as a Markdown table."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-profile-", dir=work_dir))
    try:
        db, out = tmp / "store.duckdb", tmp / "statements.json"
        if store is not None:
            shutil.copyfile(store, db)
        argv = [python, "-c", PROFILE, str(out), "ingest", str(path), "--db", str(db)]
        m = run_measured([*argv, "--json", "--quiet"], 4 * 3600.0, cwd=REPO)
        if m.code != 0:
            raise SystemExit(f"profiled ingest failed ({m.code}): {m.err.strip()[-1000:]}")
        doc = json.loads(out.read_text())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = sorted(doc["statements"], key=lambda r: -r[1])
    lines = [
        f"Ingest of {path.name} with every statement timed: {doc['wall']:.1f} s wall, "
        f"{doc['cpu']:.1f} s CPU in the process (after start-up), of which "
        f"{sum(r[0] for r in rows):.1f} s / {sum(r[1] for r in rows):.1f} s CPU in "
        f"{len(rows)} statements; peak RSS {doc['hwm']:.0f} MiB.",
        "",
        "| wall s | CPU s | peak so far MiB | statement |",
        "|---:|---:|---:|---|",
    ]
    for wall, cpu, hwm, sql in rows[:top]:
        shown = sql[:90].replace("|", "\\|")
        lines.append(f"| {wall:.2f} | {cpu:.2f} | {hwm:.0f} | `{shown}` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default=DEFAULT_SIZES, type=parse_sizes, help="generated files to use (1M,10M)"
    )
    parser.add_argument("--files", nargs="*", type=Path, help="benchmark these CSV files instead")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=METHODS, help="time one side only")
    parser.add_argument(
        "--before",
        type=code_copy,
        help="also time the ingest of the abeval code in this folder (a git archive)",
    )
    parser.add_argument("--nice", type=int, default=0, help="run every side under nice -n")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--no-generate", action="store_true", help="do not create missing files")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per load")
    parser.add_argument("--python", default=sys.executable, help="interpreter for both sides")
    parser.add_argument("--record", action="store_true", help="append the table to --results")
    parser.add_argument("--results", type=Path, default=RESULTS, help="default: %(default)s")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="ingest the first file once with every statement timed (no comparison)",
    )
    parser.add_argument(
        "--profile-store", type=Path, help="with --profile: ingest into a copy of this store"
    )
    parser.add_argument("--top", type=int, default=15, help="statements --profile shows")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")

    paths: list[Path] = []
    if args.files:
        paths = [p.resolve() for p in args.files]
    else:
        for rows in args.sizes:
            path = data_path(rows, "csv", args.data_dir)
            if not path.exists():
                if args.no_generate:
                    parser.error(f"{path} is missing: run benchmarks/gen_events.py")
                print(f"generating {path.name} ...", file=sys.stderr, flush=True)
                generator = [args.python, str(HERE / "gen_events.py")]
                subprocess.run(
                    [*generator, "--sizes", str(rows), "--data-dir", str(args.data_dir)], check=True
                )
            paths.append(path)
    missing = [p for p in paths if not p.exists()]
    if missing:
        parser.error(f"missing: {', '.join(map(str, missing))}")

    work_dir = args.data_dir if args.data_dir.exists() else Path(tempfile.gettempdir())
    if args.profile:
        print(profile(paths[0], work_dir, args.python, args.profile_store, args.top))
        return 0
    methods = (args.only,) if args.only else METHODS
    if args.before is not None:
        methods = (BEFORE, *methods)
    bench = Bench(args.python, args.timeout, work_dir, args.before, args.nice)
    results = []
    for path in paths:
        print(f"{path.name}:", file=sys.stderr, flush=True)
        results.append(bench_file(bench, path, args.runs, methods))
    text = markdown(results, args.runs)
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if IS_MAC else 1024) / 2**20
    text += (
        f"Peak RSS counts from the launcher's own ({floor:.0f} MiB), which a child forks from.\n"
    )
    print(text)
    if args.record:
        record(text, machine(), args.results)
        print(f"appended to {args.results}", file=sys.stderr)
    ok = all(r.of(m) for r in results for m in methods)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
