"""Time ``abeval report --format json`` against a hand-written DuckDB aggregation.

The baseline is one DuckDB query, written by hand, that computes per arm what
the report's statistics need: users, and per-user sums, sums of squares and
cross-products of impressions, clicks, purchases and revenue after exposure
and over the pre-period. Both run as subprocesses on the same store, interleaved,
several times; the script prints medians and the ratio, and can append them to
``benchmarks/RESULTS.md``.

    python benchmarks/bench_report.py --rows 10000000 --runs 3 --record

Target (issue 3): report <= 2 x baseline + 1.5 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

BASELINE_SQL = """
WITH ev AS (SELECT * FROM events WHERE experiment = 'home-reco-v2'),
exposed AS (
    SELECT user_id, MIN(ts) AS t0, MIN(arm) AS arm, COUNT(DISTINCT arm) AS arms
    FROM ev WHERE event_type = 'exposure' GROUP BY user_id
),
per_user AS (
    SELECT x.arm, x.user_id,
        COUNT(*) FILTER (WHERE e.event_type = 'impression' AND e.ts >= x.t0) AS imp,
        COUNT(*) FILTER (WHERE e.event_type = 'click' AND e.ts >= x.t0) AS clk,
        COUNT(*) FILTER (WHERE e.event_type = 'purchase' AND e.ts >= x.t0) AS pur,
        COALESCE(SUM(e.value) FILTER (WHERE e.event_type = 'purchase' AND e.ts >= x.t0), 0) AS rev,
        COUNT(*) FILTER (WHERE e.event_type = 'impression' AND e.ts < x.t0
                         AND e.ts >= x.t0 - INTERVAL 14 DAY) AS pimp,
        COUNT(*) FILTER (WHERE e.event_type = 'click' AND e.ts < x.t0
                         AND e.ts >= x.t0 - INTERVAL 14 DAY) AS pclk
    FROM exposed x JOIN ev e USING (user_id) WHERE x.arms = 1
    GROUP BY x.arm, x.user_id
)
SELECT arm, COUNT(*), SUM(imp), SUM(clk), SUM(pur), SUM(rev),
    SUM(imp * imp), SUM(clk * clk), SUM(clk * imp), SUM(rev * rev), SUM(pur * pur),
    SUM(rev * pur), SUM(pimp), SUM(pclk), SUM(clk * pclk), SUM(pclk * pclk)
FROM per_user GROUP BY arm
"""


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def build_store(rows: int) -> Path:
    """A store with about ``rows`` events from the simulator (cached in data/)."""
    from abeval.simulate import SimulationConfig, users_for_rows, write_events

    DATA.mkdir(exist_ok=True)
    db = DATA / f"report-{rows}.duckdb"
    if db.exists():
        return db
    csv = DATA / f"report-{rows}.csv"
    config = SimulationConfig(users=users_for_rows(rows), seed=11)
    write_events(config, csv)
    subprocess.run(
        [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", str(db), "--quiet"],
        check=True,
    )
    return db


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    import duckdb

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, "
        f"DuckDB {duckdb.__version__}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    db = build_store(args.rows)
    baseline_cmd = [
        sys.executable,
        "-c",
        "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True); "
        "print(c.execute(sys.argv[2]).fetchall())",
        str(db),
        BASELINE_SQL,
    ]
    base = [
        sys.executable,
        "-m",
        "abeval",
        "report",
        "-e",
        "home-reco-v2",
        "--db",
        str(db),
        "--format",
        "json",
    ]
    variants = {
        "baseline: hand-written DuckDB query": baseline_cmd,
        "abeval report --format json --no-offline": [*base, "--no-offline"],
        "abeval report --format json (with offline replay)": base,
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    run(baseline_cmd)  # warm the page cache
    for _ in range(args.runs):
        for name, cmd in variants.items():
            times[name].append(run(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    b = med["baseline: hand-written DuckDB query"]
    lines = [
        f"### Report vs hand-written query, {args.rows:,} events "
        f"({datetime.now(UTC):%Y-%m-%d}, {args.runs} runs, median)",
        "",
        f"Machine: {machine()}",
        "",
        "| command | median s | ratio to baseline | target 2 x baseline + 1.5 s |",
        "|---|---|---|---|",
    ]
    for name, t in med.items():
        target = "" if name.startswith("baseline") else ("met" if t <= 2 * b + 1.5 else "MISSED")
        lines.append(f"| {name} | {t:.2f} | {t / b:.2f} | {target} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
