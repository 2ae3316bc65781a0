"""Time the default report (``abeval report --format json``) against the number of
recorded team metrics: 10, 50, 200 and 500 by default, on one small simulated store.

The metrics are of the kinds a team writes, in turn: a mean count filtered on the
``device`` attribute, a proportion of users with a purchase on one device, and a
ratio of clicks to impressions on one device. Each count's store is a copy of the
same store with that many metrics recorded (``abeval metrics add``); each report
runs as a subprocess (wall, CPU, peak RSS), and with ``--before DIR`` (a copy of
the code before a change: ``git archive COMMIT | tar -x -C DIR``) the same report
by that code runs alternately with it, so that both see the same machine load. A
run past ``--timeout`` seconds is stopped and shown as ``> T``, a failed one by its
exit code (-8: killed by SIGFPE); neither is run again. The script also
prints the size of the statement whose cost grows with the metrics (the per-arm
moments: its aggregates and DuckDB's ``EXPLAIN``), and with ``--before`` checks
that both reports' numbers agree to a relative 1e-9.

    nice -n 10 python benchmarks/bench_metrics.py --rows 20000 --runs 3 --before /tmp/main
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_report import DATA, build_store, report_command  # noqa: E402
from measure import code_copy, describe, machine, publish, run_measured  # noqa: E402

DEVICES = ("mobile", "desktop", "tablet")

#: The statement of the per-arm moments of a store's report, and DuckDB's plan of it:
#: run by the code under test (``PYTHONPATH``), on the store given.
PLAN = """\
import sys, duckdb
from abeval.store.sql import online_moments, online_pass
from abeval.analysis.team_metrics import read_catalog
from sqlalchemy import create_engine
engine = create_engine("duckdb:///" + sys.argv[1], connect_args={"read_only": True})
with engine.connect() as conn:
    variables = read_catalog(conn).variables
sql = online_moments.arm_moments_sql(7, variables=variables)
lines = 0
if len(sql) < 1_000_000:  # beyond, DuckDB 2.0 is killed by SIGFPE planning it
    engine.dispose()
    con = duckdb.connect(sys.argv[1], read_only=True)
    plan = con.execute("EXPLAIN " + sql.replace(":experiment", "'x'")).fetchall()
    lines = len("\\n".join(str(r[1]) for r in plan).splitlines())
print(sql.count("COVAR_SAMP("), sql.count("VAR_SAMP("), len(sql), lines)
"""


def metrics_toml(count: int) -> str:
    """``count`` team metrics, the three kinds in turn, each on one device."""
    out = []
    for i in range(count):
        device = DEVICES[i % len(DEVICES)]
        kind = (i // len(DEVICES)) % 3
        name = f"m{i:03d}"
        if kind == 0:
            body = f'kind = "mean"\nevent = "click"\nwhere = {{ device = "{device}" }}'
        elif kind == 1:
            body = f'kind = "proportion"\nevent = "purchase"\nwhere = {{ device = "{device}" }}'
        else:
            body = (
                'kind = "ratio"\nnumerator = { event = "click" }\n'
                f'denominator = {{ event = "impression" }}\nwhere = {{ device = "{device}" }}'
            )
        out.append(f"[{name}]\n{body}\n")
    return "\n".join(out)


def with_metrics(db: Path, count: int, code: Path | None = None) -> Path:
    """A copy of ``db`` with ``count`` metrics recorded (by ``code`` when given)."""
    copy = db.with_name(f"{db.stem}-metrics{count}.duckdb")
    if copy.exists():
        return copy
    shutil.copyfile(db, copy)
    toml = db.with_name(f"{db.stem}-metrics{count}.toml")
    toml.write_text(metrics_toml(count))
    env = {**os.environ, "PYTHONPATH": str(code.resolve())} if code else None
    subprocess.run(
        [sys.executable, "-m", "abeval", "metrics", "add", str(toml), "--db", str(copy)],
        check=True,
        cwd=code or HERE.parent,
        env=env,
    )
    return copy


def statement_size(db: Path, code: Path | None) -> str:
    """COVAR_SAMP and VAR_SAMP aggregates, characters of SQL and lines of plan of
    the per-arm moments statement."""
    env = {**os.environ, "PYTHONPATH": str((code or HERE.parent).resolve())}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PLAN, str(db.resolve())],
            capture_output=True,
            text=True,
            env=env,
            cwd=code or HERE.parent,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "(not planned in 300 s)"
    if done.returncode != 0:
        return f"(failed: {done.stderr.strip().splitlines()[-1:]})"
    covar, var, chars, lines = done.stdout.split()
    var = str(int(var) - int(covar))
    return f"{covar} COVAR_SAMP, {var} VAR_SAMP, {chars} chars, {lines} plan lines"


def numbers_differ(before: object, now: object, where: str = "") -> tuple[float, list[str]]:
    """The largest relative difference between the numbers both reports hold, and
    where they differ otherwise; the methodology's statement differs by design, and
    its centred cross-products of the pairs no metric reads may be left out now."""
    worst, notes = 0.0, []
    if isinstance(before, dict) and isinstance(now, dict):
        if before.keys() != now.keys() and not (
            where.endswith("centred_cross_products") and now.keys() <= before.keys()
        ):
            notes.append(f"keys differ at {where}")
        for k in before.keys() & now.keys():
            skipped = k in ("generated_at", "store", "sql")
            if skipped or any(w in k for w in ("time", "seconds", "_at")):
                continue
            w, n = numbers_differ(before[k], now[k], f"{where}.{k}")
            worst, notes = max(worst, w), notes + n
    elif isinstance(before, list) and isinstance(now, list):
        if len(before) != len(now):
            return worst, [f"lengths differ at {where}"]
        for i, (a, b) in enumerate(zip(before, now, strict=True)):
            w, n = numbers_differ(a, b, f"{where}[{i}]")
            worst, notes = max(worst, w), notes + n
    elif isinstance(before, int | float) and isinstance(now, int | float):
        worst = abs(float(before) - float(now)) / max(abs(float(before)), abs(float(now)), 1.0)
    elif before != now:
        notes.append(f"{where} differs")
    return worst, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--counts", default="10,50,200,500")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--before", type=code_copy, help="a copy of the code before a change")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    codes: dict[str, Path | None] = {"now": None}
    if args.before:
        codes = {"before": args.before, "now": None}
    stores = {
        (who, n): with_metrics(build_store(args.rows, DATA, code), n, code)
        for who, code in codes.items()
        for n in counts
    }
    load = os.getloadavg()
    cells: dict[tuple[str, int], list[tuple[float, float, float]]] = {k: [] for k in stores}
    outs: dict[tuple[str, int], str] = {}
    stopped: dict[tuple[str, int], str] = {}  # timed out, or failed: how
    for _ in range(args.runs):
        for n in counts:
            for who, code in codes.items():  # alternately: the same load for both
                if (who, n) in stopped:
                    continue
                env = {"PYTHONPATH": str(code.resolve())} if code else None
                was = resource.getrusage(resource.RUSAGE_CHILDREN)
                m = run_measured(
                    report_command(stores[(who, n)]),
                    args.timeout,
                    cwd=code or HERE.parent,
                    env=env,
                )
                now = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = now.ru_utime + now.ru_stime - was.ru_utime - was.ru_stime
                if m.timed_out or m.code != 0:  # not run again
                    stopped[(who, n)] = f"> {args.timeout:.0f}" if m.timed_out else f"exit {m.code}"
                    cells[(who, n)] = [(m.seconds, cpu, m.rss_mib)]
                    continue
                cells[(who, n)].append((m.seconds, cpu, m.rss_mib))
                outs[(who, n)] = m.out
    lines = [
        f"## Report cost against recorded team metrics ({args.rows:,} rows, {args.runs} runs)",
        "",
        f"Machine: {describe(machine())}; load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.",
        "",
        "| metrics | code | median wall s | median CPU s | peak RSS MiB | moments statement |",
        "|---|---|---|---|---|---|",
    ]
    for n in counts:
        for who, code in codes.items():
            got = cells[(who, n)]
            if (who, n) in stopped:
                wall = f"{stopped[(who, n)]} after {got[0][0]:.0f} s"
            else:
                wall = f"{statistics.median(g[0] for g in got):.2f}"
            cpu = statistics.median(g[1] for g in got)
            rss = max(g[2] for g in got)
            size = statement_size(stores[(who, n)], code)
            lines.append(f"| {n} | {who} | {wall} | {cpu:.2f} | {rss:.0f} | {size} |")
    if args.before:
        lines.append("")
        for n in counts:
            if ("before", n) in outs and ("now", n) in outs:
                worst, notes = numbers_differ(
                    json.loads(outs[("before", n)]), json.loads(outs[("now", n)])
                )
                said = "; ".join(notes[:3]) or "the same keys but unread cross-products"
                lines.append(
                    f"- {n} metrics: largest relative difference of the report's numbers, "
                    f"before vs now: {worst:.1e} ({said})."
                )
    publish(lines, args.record)


if __name__ == "__main__":
    main()
