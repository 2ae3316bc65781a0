"""The Spark report at a size far beyond one machine, projected from two measured sizes.

    python benchmarks/spark_projection.py /tmp/abeval-spark-bench/results.json \\
        --events 1e9 --executors 20 --cores 4

Reads the ``results.json`` of ``bench_spark.py`` (each size's statements with
Spark's metrics, ``spark_metrics``) and, per statement (by name, a name sent twice
summed), takes the two largest sizes measured, n₁ < n₂:

- bytes shuffled (write + read) at N events, two ways: linear through the two
  points, b(N) = b₂ + (b₂ − b₁)(N − n₂)/(n₂ − n₁); and a power law with the
  exponent measured between them, b₂ (N/n₂)^α, α = ln(b₂/b₁)/ln(n₂/n₁);
- the statement's task seconds at N: its task seconds at n₂ times b(N)/b₂ (the
  statement's own shuffle throughput per core, bytes per task second, measured at
  n₂, held constant); a statement that shuffles nothing: its task seconds times N/n₂;
  the same with CPU seconds (the executors' thread CPU time, which a loaded
  machine inflates less than wall-clock task time);
- its time on the cluster: the fixed cost of a statement (``SELECT 1``, measured,
  plus ``--stage-cost`` per stage) + task seconds / (executors × cores).

It prints a table per statement and the report's total, and the share of the
beyond-accuracy statement (the one whose last CTEs start with ``b``) and of the
ranking kernel (``k_``).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from bench_spark import summed


def linear(x1: float, y1: float, x2: float, y2: float, x: float) -> float:
    """y at x on the line through (x1, y1) and (x2, y2), never below 0."""
    return max(0.0, y2 + (y2 - y1) * (x - x2) / (x2 - x1))


def power(x1: float, y1: float, x2: float, y2: float, x: float) -> float:
    """y at x on the power law through the two points (y₁, y₂ > 0), else proportional."""
    if y1 <= 0 or y2 <= 0:
        return y2 * x / x2
    return y2 * (x / x2) ** (math.log(y2 / y1) / math.log(x2 / x1))


def project(
    small: dict[str, Any],
    large: dict[str, Any],
    events: float,
    slots: int,
    stage_cost: float,
) -> list[dict[str, Any]]:
    """Per statement: bytes, task and CPU seconds, and seconds on ``slots`` cores at ``events``."""
    n1, n2 = float(small["rows"]), float(large["rows"])
    a, b = summed(small["metrics"]), summed(large["metrics"])
    fixed = float(large["costs"]["spark select 1"])
    out = []
    for name, y in b.items():
        x = a.get(name)
        if x is None:
            continue
        b1 = x["shuffle_write_bytes"] + x["shuffle_read_bytes"]
        b2 = y["shuffle_write_bytes"] + y["shuffle_read_bytes"]
        lo, hi = sorted((linear(n1, b1, n2, b2, events), power(n1, b1, n2, b2, events)))
        grow_lo, grow_hi = (lo / b2, hi / b2) if b2 > 0 else (events / n2, events / n2)
        start = y["count"] * fixed + y["stages"] * stage_cost
        out.append(
            {
                "name": name,
                "bytes_1": b1,
                "bytes_2": b2,
                "bytes_lo": lo,
                "bytes_hi": hi,
                "task_2": y["task_seconds"],
                "cpu_2": y["cpu_seconds"],
                "fixed": start,
                "seconds_lo": start + y["cpu_seconds"] * grow_lo / slots,
                "seconds_hi": start + y["task_seconds"] * grow_hi / slots,
            }
        )
    return sorted(out, key=lambda r: -r["seconds_hi"])


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f}"


def table(rows: list[dict[str, Any]], label: str) -> list[str]:
    lines = [
        f"| statement | shuffle GiB measured (small → large) | shuffle GiB at {label} "
        "| task s (CPU s) measured | fixed s | seconds at " + label + " |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = {k: sum(r[k] for r in rows) for k in rows[0] if k != "name"}
    for r in [*rows, {"name": "total", **total}]:
        lines.append(
            f"| {r['name']} | {gib(r['bytes_1'])} → {gib(r['bytes_2'])} "
            f"| {gib(r['bytes_lo'])}–{gib(r['bytes_hi'])} "
            f"| {r['task_2']:.1f} ({r['cpu_2']:.1f}) | {r['fixed']:.1f} "
            f"| {r['seconds_lo']:,.0f}–{r['seconds_hi']:,.0f} |"
        )
    return lines


def shares(rows: list[dict[str, Any]]) -> list[str]:
    """The beyond-accuracy statement's and the ranking kernel's bytes and seconds."""
    lines = []
    for label, key in (("beyond-accuracy (b…)", "b"), ("ranking kernel (k_…)", "k_")):
        mine = [r for r in rows if r["name"].rsplit(", ", 1)[-1].startswith(key)]
        got = {k: sum(r[k] for r in mine) for k in ("bytes_2", "seconds_hi", "seconds_lo")}
        total = {k: sum(r[k] for r in rows) for k in got}
        lines.append(
            f"- {label}: {len(mine)} statement(s), "
            f"{got['bytes_2'] / max(total['bytes_2'], 1):.0%} of the bytes shuffled at the "
            f"larger size measured, {got['seconds_lo'] / max(total['seconds_lo'], 1e-9):.0%} "
            f"of the projected time from CPU seconds and "
            f"{got['seconds_hi'] / max(total['seconds_hi'], 1e-9):.0%} from task seconds."
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("results", type=Path, help="bench_spark.py's results.json")
    ap.add_argument("--events", type=float, default=1e9)
    ap.add_argument("--executors", type=int, default=20)
    ap.add_argument("--cores", type=int, default=4, help="cores per executor")
    ap.add_argument("--stage-cost", type=float, default=0.1, help="seconds per stage")
    args = ap.parse_args()
    measured = [r for r in json.loads(args.results.read_text()) if "metrics" in r]
    if len(measured) < 2:
        raise SystemExit(f"{args.results}: needs two sizes with Spark metrics")
    small, large = measured[-2], measured[-1]
    rows = project(small, large, args.events, args.executors * args.cores, args.stage_cost)
    label = f"{args.events:,.0f}"
    print(
        f"Projected from {small['rows']:,} and {large['rows']:,} events to {label} on "
        f"{args.executors} executors × {args.cores} cores; fixed cost per statement "
        f"{large['costs']['spark select 1']:.3f} s (`SELECT 1`) + {args.stage_cost} s per stage."
    )
    print()
    print("\n".join(table(rows, label)))
    print()
    print("\n".join(shares(rows)))


if __name__ == "__main__":
    main()
