"""The report on PostgreSQL against the same report on DuckDB, statement by statement.

    python benchmarks/bench_postgres.py --sizes 200k,1M --data-dir /tmp/abeval-pg-bench \\
        --nice 10 --record

PostgreSQL's planner chooses join orders and join kinds from its statistics; a
change to the SQL that DuckDB runs as well as before can turn a hash join into a
nested loop there, and only a clock sees it. At each size this script:

- generates the CSV of ``gen_events.py`` when missing (seed 0);
- starts a throwaway PostgreSQL server (``tests/pgserver.py``: the machine's
  binaries, a temporary cluster, fsync off) and one database per size;
- ingests the file into it and into a DuckDB store, each ``abeval ingest`` in its
  own process (wall, CPU seconds of the child, peak RSS);
- runs ``abeval report -e home-reco-v2 --format json`` once on each, with every
  statement timed (``bench_report.STATEMENTS``), and checks that the two reports
  agree (largest relative difference, ``bench_spark.largest_difference``);
- prints the totals and, per statement (by its last common table expressions),
  the seconds on each engine and their ratio, slowest on PostgreSQL first;
- has the server log the plan of every statement slower than ``--explain-over``
  seconds (``auto_explain``, with actual row counts, no per-node timing) and lists
  the nested-loop joins that compared more than ``--loop-rows`` pairs of rows: the
  plan regression this benchmark exists to catch.

A nested loop over a few rows is what PostgreSQL should do; one over thousands of
rows on each side is the regression. Its first run found one: the off-policy
click match took 233 s instead of 0.3 s at 200k events, because a store just
ingested had no planner statistics (benchmarks/RESULTS.md, 2026-11-26).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
from bench_report import STATEMENTS, report_command, statement_name  # noqa: E402
from bench_spark import largest_difference  # noqa: E402
from gen_events import data_path, parse_sizes, size_label  # noqa: E402
from measure import Measured, describe, machine, publish, run_measured  # noqa: E402

TIMEOUT = 7200.0


def measured(
    argv: list[str], nice: int, env: dict[str, str] | None = None
) -> tuple[Measured, float]:
    """One command in its own process: the measurement and its CPU seconds."""
    prefix = ["nice", "-n", str(nice)] if nice else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = run_measured([*prefix, *argv], TIMEOUT, cwd=REPO, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if m.code != 0:
        raise SystemExit(f"{' '.join(argv[:5])} ... failed ({m.code}): {m.err.strip()[-800:]}")
    return m, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def by_statement(log: list[list[Any]]) -> dict[str, float]:
    """Seconds per statement name, a statement sent more than once summed."""
    seconds: dict[str, float] = defaultdict(float)
    for row in log:
        seconds[statement_name(row[3])] += row[0]
    return dict(seconds)


_ACTUAL = re.compile(r"\(actual rows=(\d+) loops=(\d+)\)")
_REMOVED = re.compile(r"Rows Removed by Join Filter: (\d+)")


def nested_loops(server_log: str, min_rows: int) -> dict[str, list[int]]:
    """Per statement name, the nested-loop joins that ``auto_explain`` (the server logs
    the plan of every statement slower than ``--explain-over``, with actual row
    counts) saw compare more than ``min_rows`` pairs of rows (the rows they gave plus
    those their join filter removed)."""
    found: dict[str, list[int]] = defaultdict(list)
    for entry in server_log.split("LOG:  duration:")[1:]:
        lines = entry.splitlines()
        start = next((i for i, line in enumerate(lines) if "Query Text:" in line), None)
        if start is None:
            continue
        plan_at = next((i for i in range(start, len(lines)) if "(cost=" in lines[i]), len(lines))
        text = " ".join(lines[start:plan_at]).split("Query Text:", 1)[1]
        plan = lines[plan_at:]
        for i, line in enumerate(plan):
            actual = _ACTUAL.search(line) if "Nested Loop" in line else None
            if actual is None:
                continue
            pairs = int(actual.group(1)) * int(actual.group(2))
            for detail in plan[i + 1 : i + 4]:
                if removed := _REMOVED.search(detail):
                    pairs += int(removed.group(1)) * int(actual.group(2))
                    break
            if pairs > min_rows:
                found[statement_name(" ".join(text.split()))].append(pairs)
    return dict(found)


def server_version(url: str) -> str:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql("SHOW server_version").scalar())
    finally:
        engine.dispose()


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def one_size(rows: int, args: argparse.Namespace, server: Any) -> list[str]:
    csv = data_path(rows, "csv", args.data_dir)
    if not csv.exists():
        gen = [sys.executable, str(HERE / "gen_events.py"), "--sizes", size_label(rows)]
        subprocess.run([*gen, "--data-dir", str(args.data_dir)], check=True)
    events = json.loads(csv.with_name(csv.name + ".json").read_text())["rows"]
    label = size_label(rows)
    duck = args.data_dir / f"pgbench-{label}.duckdb"
    for old in (duck, duck.with_name(duck.name + ".wal")):
        old.unlink(missing_ok=True)
    url = server.create_database(f"bench_{label.lower()}")
    stores = {"duckdb": str(duck), "postgresql": url}
    ingests, reports, logs, outs = {}, {}, {}, {}
    for engine, db in stores.items():
        ingests[engine] = measured(
            [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", db, "--quiet"], args.nice
        )
        print(f"  {label} {engine} ingest: {ingests[engine][0].seconds:.1f} s", file=sys.stderr)
    server_log = server.directory / "server.log"
    for engine, db in stores.items():
        seen = server_log.stat().st_size
        timed = args.data_dir / f"pg-statements-{engine}-{label}.json"
        cmd = [sys.executable, "-c", STATEMENTS, str(timed), *report_command(Path(db))[3:]]
        cmd[cmd.index("--db") + 1] = db
        reports[engine] = measured(cmd, args.nice)
        outs[engine] = json.loads(reports[engine][0].out)
        logs[engine] = json.loads(timed.read_text())["statements"]
        if engine == "postgresql":
            with server_log.open("rb") as f:
                f.seek(seen)
                loops_of = nested_loops(f.read().decode(errors="replace"), args.loop_rows)
        print(f"  {label} {engine} report: {reports[engine][0].seconds:.1f} s", file=sys.stderr)
    worst, other = largest_difference(outs["duckdb"], outs["postgresql"])
    lines = [
        f"#### {events:,} events",
        "",
        "| engine | ingest s | ingest CPU s | ingest peak RSS MiB | report s | report CPU s "
        "| report peak RSS MiB | statements | s in statements |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine in stores:
        (im, icpu), (rm, rcpu) = ingests[engine], reports[engine]
        lines.append(
            f"| {engine} | {im.seconds:.1f} | {icpu:.1f} | {im.rss_mib:,.0f} | {rm.seconds:.1f} "
            f"| {rcpu:.1f} | {rm.rss_mib:,.0f} | {len(logs[engine])} "
            f"| {sum(r[0] for r in logs[engine]):.1f} |"
        )
    lines += [
        "",
        f"The two reports' numbers differ by at most {worst:.1e} (relative)"
        + (f"; other differences: {', '.join(other[:5])}" if other else "")
        + ".",
        "",
        "| statement | PostgreSQL s | DuckDB s | ratio | nested loops comparing more than "
        f"{args.loop_rows:,} pairs of rows |",
        "|---|---:|---:|---:|---|",
    ]
    pg, dk = by_statement(logs["postgresql"]), by_statement(logs["duckdb"])
    for name in sorted(pg, key=lambda n: -pg[n])[: args.top]:
        ratio = f"{pg[name] / dk[name]:.1f}×" if dk.get(name) else "–"
        loops = ", ".join(f"{n:,}" for n in loops_of.get(name, [])) or "none"
        lines.append(f"| {name} | {pg[name]:.2f} | {dk.get(name, 0.0):.2f} | {ratio} | {loops} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes",
        default=[200_000],
        type=parse_sizes,
        help="comma-separated event counts (200k, 1M)",
    )
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--nice", type=int, default=0, help="run the commands under nice -n")
    ap.add_argument("--top", type=int, default=12, help="statements shown")
    ap.add_argument("--explain-over", type=float, default=0.5, help="seconds: plan these")
    ap.add_argument(
        "--loop-rows", type=int, default=100_000, help="flag nested loops comparing more pairs"
    )
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    from pgserver import PostgresServer

    info = machine(("duckdb", "sqlalchemy", "psycopg"))
    settings = {
        "session_preload_libraries": "auto_explain",
        "auto_explain.log_min_duration": f"{round(args.explain_over * 1000)}ms",
        "auto_explain.log_analyze": "on",
        "auto_explain.log_timing": "off",
    }
    with PostgresServer(settings=settings) as server:
        version = server_version(server.url)
        body = [
            f"### The report on PostgreSQL against DuckDB ({info['date']}, one run each)",
            "",
            f"Machine: {describe(info)}; PostgreSQL {version} (tests/pgserver.py: fsync off, "
            f"default memory settings); load average {load()} at the start",
            "",
        ]
        for rows in args.sizes:
            body += [*one_size(rows, args, server), ""]
    publish(body, args.record)


if __name__ == "__main__":
    main()
