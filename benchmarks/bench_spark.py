"""The report on a Spark cluster against the same report on DuckDB, at growing sizes.

    python benchmarks/bench_spark.py --sizes 1M,10M --data-dir /tmp/abeval-spark-bench \\
        --nice 10 --record

At each size: the CSV of ``gen_events.py`` (generated when missing) is ingested
into a DuckDB store (kept in ``--data-dir`` and reused); the store's ``events``,
``experiments`` and ``ingests`` are written as Parquet by DuckDB and registered
in the cluster's catalog (``CREATE TABLE ... USING parquet LOCATION``), as
tests/spark/spark_tables.py does. Then ``abeval report -e home-reco-v2 --format
json`` runs once on each store, in its own process, with every statement timed,
and the two reports must agree (largest relative difference printed).

Measured: wall time and the abeval process's peak RSS (its ``VmHWM``) of each
report; on Spark also the resident memory of the cluster's JVMs (master,
workers, the Spark Connect server and the executors), sampled every 0.5 s, at
its highest and before the report; each engine's cost of a query that does
nothing (``SELECT 1``) and of one pass over the experiment's events (a count);
and, per statement (by its last CTEs), the seconds on each engine. On Spark
also each statement's own metrics (spark_metrics.py: jobs, stages, tasks, input,
shuffle write and read, spill, task and CPU seconds) from the Connect server's UI,
a table per size and the growth between sizes.

With ``--before DIR`` (a copy of older code: ``git archive COMMIT | tar -x -C DIR``)
the Spark report of that code runs too, on the same cluster and tables, just
before this code's (``python -m abeval`` from ``DIR``), measured the same way;
the load average is recorded at the start and end of each report.

The cluster is started with scripts/spark/start.sh (under ``--data-dir``, free
ports) and stopped at the end, unless ``--spark-url`` names a running one
(``--lab`` then says where its pid files are, for the memory samples).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_report import STATEMENTS, report_command, statement_name  # noqa: E402
from gen_events import data_path, parse_sizes, size_label  # noqa: E402
from measure import code_copy, describe, machine, publish, run_measured  # noqa: E402
from spark_metrics import SparkUI, StageCost, by_tag, mib, ui_conf  # noqa: E402

EXPERIMENT = "home-reco-v2"
TABLES = ("events", "experiments", "ingests")
VOLATILE = {"generated_at", "store", "finished_at"}
#: The reports of one size, in the order they run (``spark-before`` with --before).
ENGINES = ("duckdb", "spark-before", "spark")

# The report with every Spark statement timed: bench_report.STATEMENTS with the
# adapter's ``execute`` timed instead of SQLAlchemy's cursor (the adapter collects
# each statement's rows inside ``execute``, so the time includes the fetch).
_HEAD, _REST = STATEMENTS.split("log, started = [], []", 1)
SPARK_STATEMENTS = (
    _HEAD
    + r"""
import os
import abeval.store.backends.spark.connection as c
log, run, prefix = [], c.SparkConnection.execute, os.environ.get("ABEVAL_BENCH_TAG")

def timed(self, statement, parameters=None):
    tag = f"{prefix}-{len(log)}" if prefix else None
    if tag:  # the statement's Spark jobs carry its tag (spark_metrics.by_tag)
        self.session.addTag(tag)
    t = time.perf_counter()
    try:
        return run(self, statement, parameters)
    finally:
        seconds = time.perf_counter() - t
        if tag:
            self.session.removeTag(tag)
        sql = " ".join(str(statement).split())
        log.append([seconds, status("VmRSS"), status("VmHWM"), sql, tag])

c.SparkConnection.execute = timed
"""
    + _REST[_REST.index("from abeval.cli import app") :]
)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_cluster(lab: Path, nice: int, ui_port: int) -> tuple[str, float]:
    """A cluster of scripts/spark/start.sh under ``lab``, the Connect server's UI on
    ``ui_port`` (its REST API gives each statement's metrics); its URL and start seconds."""
    env = {
        **os.environ,
        "LAB": str(lab),
        "PYTHON": sys.executable,
        "MASTER_PORT": str(free_port()),
        "CONNECT_PORT": str(free_port()),
        "MASTER_UI": "0",
        "WORKER_UI_BASE": "0",
        "TIMEOUT": "300",
        "CONNECT_EXTRA_CONF": ui_conf(ui_port),
    }
    prefix = ["nice", "-n", str(nice)] if nice else []
    t0 = time.perf_counter()
    subprocess.run([*prefix, "bash", str(REPO / "scripts/spark/start.sh")], env=env, check=True)
    return f"sc://127.0.0.1:{env['CONNECT_PORT']}", time.perf_counter() - t0


def stop_cluster(lab: Path) -> None:
    env = {**os.environ, "LAB": str(lab)}
    subprocess.run(["bash", str(REPO / "scripts/spark/stop.sh")], env=env, check=False)


def cluster_pids(lab: Path) -> list[int]:
    """The JVMs of the cluster: those of the pid files and their children (executors)."""
    roots = []
    for f in (lab / "run" / "pids").glob("*.pid"):
        try:
            roots.append(int(f.read_text().strip()))
        except (OSError, ValueError):
            continue
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int(
                    (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    found, todo = set(roots), list(roots)
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class Sampler:
    """The cluster's resident memory every 0.5 s while a report runs: the highest sum."""

    def __init__(self, lab: Path | None) -> None:
        self.lab, self.peak, self._stop = lab, 0.0, threading.Event()
        self.before = rss_mib(cluster_pids(lab)) if lab else 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while self.lab and not self._stop.wait(0.5):
            self.peak = max(self.peak, rss_mib(cluster_pids(self.lab)))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def prepare(rows: int, data_dir: Path, nice: int) -> tuple[Path, dict[str, Path], int]:
    """The DuckDB store of ``rows`` events and its tables as Parquet folders."""
    prefix = ["nice", "-n", str(nice)] if nice else []
    label = size_label(rows)
    csv = data_path(rows, "csv", data_dir)
    if not csv.exists():
        gen = [sys.executable, str(HERE / "gen_events.py"), "--sizes", label]
        subprocess.run([*prefix, *gen, "--data-dir", str(data_dir)], check=True)
    events = int(json.loads(csv.with_name(csv.name + ".json").read_text())["rows"])
    db = data_dir / f"store-{label}.duckdb"
    if not db.exists():
        ingest = [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", str(db), "--quiet"]
        subprocess.run([*prefix, *ingest], check=True, cwd=REPO)
    folders = {t: data_dir / f"parquet-{label}" / t for t in TABLES}
    if not all((f / "part-0.parquet").exists() for f in folders.values()):
        import duckdb

        con = duckdb.connect(str(db), read_only=True)
        try:
            for table, folder in folders.items():
                folder.mkdir(parents=True, exist_ok=True)
                con.execute(f"COPY {table} TO '{folder / 'part-0.parquet'}' (FORMAT parquet)")
        finally:
            con.close()
    return db, folders, events


def register(url: str, folders: dict[str, Path]) -> float:
    """The Parquet folders as the tables of the session's current database; seconds."""
    from pyspark.sql.connect.session import SparkSession

    t0 = time.perf_counter()
    session = SparkSession.builder.remote(url).create()
    try:
        for table, folder in folders.items():
            session.sql(f"DROP TABLE IF EXISTS {table}").collect()
            session.sql(f"CREATE TABLE {table} USING parquet LOCATION '{folder}'").collect()
    finally:
        session.stop()
    return time.perf_counter() - t0


def query_costs(url: str, db: Path) -> dict[str, float]:
    """Median seconds of ``SELECT 1`` and of a count of the experiment's events on
    each engine (through the same code path as the report: one statement each)."""
    from sqlalchemy import text

    from abeval.store import open_store

    count = "SELECT COUNT(*) FROM events WHERE experiment = :e"
    # one shuffle: the same pass, then a second stage grouping by user (a few
    # thousand rows come back): with the count, the cost of one more stage
    grouped = (
        "SELECT COUNT(*) FROM (SELECT user_id, COUNT(*) AS n FROM events "
        "WHERE experiment = :e GROUP BY user_id) g"
    )
    probes = (("select 1", "SELECT 1", 5), ("count", count, 3), ("grouped", grouped, 3))
    out: dict[str, float] = {}
    for engine, where in (("spark", url), ("duckdb", str(db))):
        with open_store(where, read_only=True) as store, store.connect() as conn:
            for name, sql, runs in probes:
                seconds = []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    conn.execute(text(sql), {"e": EXPERIMENT}).fetchall()
                    seconds.append(time.perf_counter() - t0)
                out[f"{engine} {name}"] = statistics.median(seconds)
    return out


def largest_difference(a: Any, b: Any, path: str = "") -> tuple[float, list[str]]:
    """The largest relative difference between the numbers of two reports, and the
    paths where anything else differs."""
    if isinstance(a, dict) and isinstance(b, dict):
        worst, other = 0.0, [] if set(a) == set(b) else [f"{path}: keys"]
        for key in set(a) & set(b) - VOLATILE:
            w, o = largest_difference(a[key], b[key], f"{path}.{key}")
            worst, other = max(worst, w), other + o
        return worst, other
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        worst, other = 0.0, []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            w, o = largest_difference(x, y, f"{path}[{i}]")
            worst, other = max(worst, w), other + o
        return worst, other
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        scale = max(abs(a), abs(b))
        return (0.0 if scale < 1e-12 else abs(a - b) / scale), []
    return 0.0, ([] if a == b else [path])


def profiled(
    engine: str,
    db: str,
    out: Path,
    args: argparse.Namespace,
    lab: Path | None,
    tag: str,
    code: Path | None = None,
):
    """One report with its statements timed (on Spark each statement's jobs tagged
    ``tag-<n>``, n its index in the log), by the abeval of ``code`` (a copy of older
    code) or of this tree; (measured run, cluster sampler, load averages at start
    and end)."""
    spark = engine.startswith("spark")
    script = SPARK_STATEMENTS if spark else STATEMENTS
    cmd = [sys.executable, "-c", script, str(out), *report_command(Path(db))[3:]]
    cmd[cmd.index("--db") + 1] = db
    prefix = ["nice", "-n", str(args.nice)] if args.nice else []
    env = {"ABEVAL_BENCH_TAG": tag}
    if code is not None:  # `-c` puts its folder first on the path: run from the copy
        env["PYTHONPATH"] = str(code.resolve())
    loads = [os.getloadavg()[0]]
    with Sampler(lab if spark else None) as sampler:
        m = run_measured([*prefix, *cmd], args.timeout, cwd=code or REPO, env=env)
    loads.append(os.getloadavg()[0])
    if m.code != 0 or not m.out.strip():
        raise SystemExit(f"the {engine} report failed ({m.code}): {m.err.strip()[-1500:]}")
    return m, sampler, loads


def by_statement(out: Path) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for s, _rss, _hwm, sql, *_tag in json.loads(out.read_text())["statements"]:
        name = statement_name(sql)
        seconds[name] = seconds.get(name, 0.0) + s
    return seconds


def run_size(rows: int, args: argparse.Namespace, url: str, lab: Path | None) -> dict[str, Any]:
    label = size_label(rows)
    db, folders, events = prepare(rows, args.data_dir, args.nice)
    registered = register(url, folders)
    costs = query_costs(url, db)
    result: dict[str, Any] = {"rows": events, "register": registered, "costs": costs}
    reports = {}
    runs: list[tuple[str, str, Path | None]] = [("duckdb", str(db), None)]
    if args.before:
        runs.append(("spark-before", url, args.before))
    runs.append(("spark", url, None))
    for engine, where, code in runs:
        out = args.data_dir / f"statements-{engine}-{label}.json"
        tag = f"abeval-{engine}-{label}-{int(time.time())}"
        m, sampler, loads = profiled(engine, where, out, args, lab, tag, code)
        doc = json.loads(out.read_text())
        result[engine] = {
            "seconds": m.seconds,
            "loads": loads,
            # The process's own VmHWM: wait4's figure starts from this launcher's
            # resident memory (pyspark and DuckDB are loaded here), kept across exec.
            "rss": doc["hwm"],
            "statements": len(doc["statements"]),
            "in_sql": sum(s[0] for s in doc["statements"]),
            "by_statement": by_statement(out),
            "cluster_before": sampler.before,
            "cluster_peak": sampler.peak,
        }
        if engine.startswith("spark") and args.ui_port:
            raw = args.data_dir / f"spark-ui-{engine}-{label}.json"
            key = engine.replace("spark", "metrics")
            result[key] = statement_metrics(doc["statements"], SparkUI(args.ui_port), raw)
        reports[engine] = json.loads(m.out)
        print(f"  {label} {engine}: {m.seconds:.1f} s, {doc['hwm']:.0f} MiB", file=sys.stderr)
    result["difference"] = largest_difference(reports["duckdb"], reports["spark"])
    if args.before:
        result["difference-before"] = largest_difference(reports["spark-before"], reports["spark"])
    return result


def statement_metrics(log: list[list[Any]], ui: SparkUI, raw: Path) -> list[dict[str, Any]]:
    """Each logged statement's name, wall seconds and Spark's metrics (by its tag);
    the REST API's jobs and stages are kept in ``raw``."""
    jobs, stages = ui.settled()
    raw.write_text(json.dumps({"jobs": jobs, "stages": stages}))
    costs = by_tag(jobs, stages, [row[4] for row in log])
    return [
        {"name": statement_name(row[3]), "seconds": row[0], **vars(costs[row[4]])} for row in log
    ]


def summed(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The statements' metrics by name (a name sent twice summed), in first-sent order."""
    out: dict[str, dict[str, Any]] = {}
    keys = ("seconds", "count", *vars(StageCost()))
    for m in metrics:
        row = out.setdefault(m["name"], dict.fromkeys(keys, 0))
        for k in keys:
            row[k] += 1 if k == "count" else m[k]
    return out


def stage_cost_sentence(r: dict[str, Any], total: dict[str, Any]) -> str:
    """What one more stage costs (a pass over the events grouped by user against the
    same pass counted: median of 3 each, same cluster, same minute) and how much of
    the report that is at the number of stages it ran."""
    c = r["costs"]
    if "spark grouped" not in c:
        return ""
    stage = max(c["spark grouped"] - c["spark count"], 0.0)
    stages = total["stages"]
    return (
        f" One more stage costs {stage:.2f} s (the events grouped by user, "
        f"{c['spark grouped']:.2f} s, against counted, {c['spark count']:.2f} s; "
        f"DuckDB {c['duckdb grouped']:.3f} s against {c['duckdb count']:.3f} s): at the "
        f"{stages} stages the report ran, {stages * stage:.1f} s of its {total['seconds']:.1f} s."
    )


def metrics_table(r: dict[str, Any], key: str = "metrics") -> list[str]:
    """One size's statements with Spark's metrics (``key``: ``metrics-before`` for
    the ``--before`` code's), the most shuffled first, and the totals."""
    rows = summed(r[key])
    zero = sum(1 for m in r[key] if m["jobs"] == 0)
    total = {k: sum(v[k] for v in rows.values()) for k in next(iter(rows.values()))}
    whose = " (the `--before` code)" if key == "metrics-before" else ""
    lines = [
        f"{r['rows']:,} events{whose}: {len(r[key])} statements ({zero} ran no Spark job), "
        f"{total['seconds']:.1f} s in them; `SELECT 1` {r['costs']['spark select 1']:.3f} s "
        f"(median of 5), so {len(r[key]) * r['costs']['spark select 1']:.1f} s of fixed "
        "cost at one `SELECT 1` per statement." + stage_cost_sentence(r, total),
        "",
        "| statement | sent | wall s | jobs | stages (skipped) | tasks | input MiB "
        "| shuffle write MiB | shuffle read MiB | spill mem/disk MiB | task s (CPU s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = sorted(rows, key=lambda n: (-rows[n]["shuffle_write_bytes"], -rows[n]["seconds"]))
    for name in [*order, "total"]:
        v = total if name == "total" else rows[name]
        lines.append(
            f"| {name} | {v['count']} | {v['seconds']:.2f} | {v['jobs']} "
            f"| {v['stages']} ({v['skipped']}) | {v['tasks']} | {mib(v['input_bytes'])} "
            f"| {mib(v['shuffle_write_bytes'])} | {mib(v['shuffle_read_bytes'])} "
            f"| {mib(v['spill_memory_bytes'])}/{mib(v['spill_disk_bytes'])} "
            f"| {v['task_seconds']:.1f} ({v['cpu_seconds']:.1f}) |"
        )
    return lines


def growth_table(small: dict[str, Any], large: dict[str, Any]) -> list[str]:
    """Per statement, shuffle write bytes and wall seconds at two sizes and their ratios."""
    a, b = summed(small["metrics"]), summed(large["metrics"])
    la, lb = size_label_of(small["rows"]), size_label_of(large["rows"])
    lines = [
        f"Growth from {la} to {lb} events (×{large['rows'] / small['rows']:.2f} events):",
        "",
        f"| statement | shuffle write MiB {la} → {lb} | × | wall s {la} → {lb} | × |",
        "|---|---:|---:|---:|---:|",
    ]

    def ratio(x: float, y: float) -> str:
        return f"{y / x:.2f}" if x > 0 else "–"

    for name in sorted(b, key=lambda n: -b[n]["shuffle_write_bytes"]):
        x, y = a.get(name), b[name]
        if x is None:
            continue
        lines.append(
            f"| {name} | {mib(x['shuffle_write_bytes'])} → {mib(y['shuffle_write_bytes'])} "
            f"| {ratio(x['shuffle_write_bytes'], y['shuffle_write_bytes'])} "
            f"| {x['seconds']:.2f} → {y['seconds']:.2f} | {ratio(x['seconds'], y['seconds'])} |"
        )
    return lines


def table(results: list[dict[str, Any]], started: float | None) -> list[str]:
    lines = [
        "| events | engine | report s | statements | s in statements | abeval peak RSS MiB "
        "| cluster RSS MiB before → peak | `SELECT 1` s | count of the events s |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in results:
        for engine in (e for e in ENGINES if e in r):
            e, c, probe = r[engine], r["costs"], engine.split("-")[0]
            cluster = (
                f"{e['cluster_before']:,.0f} → {e['cluster_peak']:,.0f}"
                if e["cluster_peak"]
                else "–"
            )
            lines.append(
                f"| {r['rows']:,} | {engine} | {e['seconds']:.1f} | {e['statements']} "
                f"| {e['in_sql']:.1f} | {e['rss']:,.0f} | {cluster} "
                f"| {c[f'{probe} select 1']:.4f} | {c[f'{probe} count']:.3f} |"
            )
    lines.append("")
    for r in results:
        worst, other = r["difference"]
        lines.append(
            f"- {r['rows']:,} events: the two reports' numbers differ by at most {worst:.1e} "
            f"(relative){'; other differences: ' + ', '.join(other[:5]) if other else ''}; "
            f"registering the Parquet tables took {r['register']:.1f} s."
        )
        if "difference-before" in r:
            worst, other = r["difference-before"]
            lines.append(
                f"- {r['rows']:,} events: the `--before` code's Spark report and this one's differ "
                f"by at most {worst:.1e} (relative)"
                f"{'; other differences: ' + ', '.join(other[:5]) if other else ''}."
            )
    if started is not None:
        lines.append(f"- The cluster (scripts/spark/start.sh) started in {started:.1f} s.")
    return lines


def summary_table(results: list[dict[str, Any]]) -> list[str]:
    """Per size and report: wall, statements, Spark's jobs, stages, tasks, shuffle and
    CPU seconds (summed over the statements), the ratio to DuckDB's report and the
    1-minute load average at the report's start and end."""
    lines = [
        "| events | report | wall s | statements | jobs | stages (skipped) | tasks "
        "| shuffle write / read MiB | task s (CPU s) | / DuckDB | load start → end |",
        "|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        duck = r["duckdb"]["seconds"]
        for engine in (e for e in ENGINES if e in r):
            e = r[engine]
            cells = "| | | | | "
            key = engine.replace("spark", "metrics")
            if engine != "duckdb" and key in r:
                t = {k: sum(m[k] for m in r[key]) for k in vars(StageCost())}
                cells = (
                    f"| {t['jobs']} | {t['stages']} ({t['skipped']}) | {t['tasks']} "
                    f"| {mib(t['shuffle_write_bytes'])} / {mib(t['shuffle_read_bytes'])} "
                    f"| {t['task_seconds']:.1f} ({t['cpu_seconds']:.1f}) "
                )
            load = " → ".join(f"{x:.1f}" for x in e.get("loads", []))
            lines.append(
                f"| {r['rows']:,} | {engine} | {e['seconds']:.1f} | {e['statements']} {cells}"
                f"| {e['seconds'] / duck:.1f}× | {load} |"
            )
    return lines


def statements_table(results: list[dict[str, Any]], top: int) -> list[str]:
    """Per statement, the seconds on each engine at each size, slowest on Spark first."""
    last = results[-1]
    names = sorted(last["spark"]["by_statement"], key=lambda n: -last["spark"]["by_statement"][n])
    head = " | ".join(
        f"{size_label_of(r['rows'])} spark s | {size_label_of(r['rows'])} duckdb s" for r in results
    )
    lines = [f"| statement | {head} |", "|---|" + "---:|" * (2 * len(results))]
    for name in names[:top]:
        cells = " | ".join(
            f"{r['spark']['by_statement'].get(name, math.nan):.1f} | "
            f"{r['duckdb']['by_statement'].get(name, math.nan):.2f}"
            for r in results
        )
        lines.append(f"| {name} | {cells} |")
    return lines


def size_label_of(rows: int) -> str:
    """The size a generated file was asked for (999,606 events: 1M)."""
    return size_label(round(rows, -6) if rows >= 500_000 else rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--sizes", default="1M,10M", type=parse_sizes, help="comma-separated event counts"
    )
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/abeval-spark-bench"))
    ap.add_argument("--spark-url", help="a running Spark Connect server (default: start one)")
    ap.add_argument("--lab", type=Path, help="with --spark-url: its start.sh LAB (memory)")
    ap.add_argument("--ui-port", type=int, help="with --spark-url: its UI port (metrics)")
    ap.add_argument("--nice", type=int, default=0, help="run the commands under nice -n")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per report")
    ap.add_argument("--top", type=int, default=12, help="statements shown")
    ap.add_argument(
        "--before",
        type=code_copy,
        help="a copy of older code (git archive COMMIT | tar -x -C DIR): its Spark report "
        "runs too, just before this code's, on the same cluster and tables",
    )
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    lab, started = args.lab, None
    if args.spark_url:
        url = args.spark_url
    else:
        lab = args.data_dir / "cluster"
        args.ui_port = free_port()
        url, started = start_cluster(lab, args.nice, args.ui_port)
    results: list[dict[str, Any]] = []
    try:
        for rows in args.sizes:  # each size's numbers are kept as soon as they are known
            results.append(run_size(rows, args, url, lab))
            (args.data_dir / "results.json").write_text(json.dumps(results, indent=1))
    finally:
        if not args.spark_url and lab is not None:
            stop_cluster(lab)
    info = machine(("duckdb", "pyspark"))
    lines = [
        f"### Report on Spark against DuckDB ({info['date']}, one run each)",
        "",
        f"Machine: {describe(info)}",
        "",
        *table(results, started),
        "",
        *summary_table(results),
        "",
        "Seconds per statement (by its last CTEs; the same statement summed over the report):",
        "",
        *statements_table(results, args.top),
    ]
    for r in results:
        for key in ("metrics-before", "metrics"):
            if key in r:
                lines += ["", *metrics_table(r, key)]
    measured = [r for r in results if "metrics" in r]
    for small, large in itertools.pairwise(measured):
        lines += ["", *growth_table(small, large)]
    publish(lines, args.record)


if __name__ == "__main__":
    main()
