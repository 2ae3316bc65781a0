"""The data side of `make spark-demo` (scripts/spark/demo.sh starts and stops the cluster).

Usage: python scripts/spark/demo.py sc://HOST:PORT OUT_DIR

Simulates the demo experiment of `abeval demo` (same users, seed and effects;
USERS=N for fewer users),
loads it into a DuckDB store and, with `abeval ingest --db sc://...`, into the
Spark cluster; writes the report computed on Spark as HTML and JSON into OUT_DIR;
and checks that every number of it equals the DuckDB report's to a relative 1e-9.
Exit status 1 when a number differs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Keys that say where or when a report was made, not what it found.
VOLATILE = {"generated_at", "store", "finished_at"}
TOLERANCE = 1e-9


def main(url: str, out: Path) -> int:
    from abeval.analysis.online import ReportOptions, build_report
    from abeval.analysis.ope import OpeOptions
    from abeval.report.html import render_html
    from abeval.simulate.demo import TARGET_FILE, demo_config, write_demo_experiment
    from abeval.store import open_store

    out.mkdir(parents=True, exist_ok=True)
    # What `abeval demo` simulates by default; USERS=5000 for a quicker run.
    config = demo_config(int(os.environ.get("USERS", "30000")), 7)
    events = write_demo_experiment(config, out)
    duck = out / "demo.duckdb"
    duck.unlink(missing_ok=True)
    # the report `abeval demo` writes, with the target probabilities it records (a
    # Spark store does not record them: this run's file gives them to both)
    targets = str(out / TARGET_FILE)
    options = ReportOptions(segment="device", ope=OpeOptions(target_propensities=targets))
    _abeval("ingest", str(events), "--db", str(duck))
    took = {}
    started = time.monotonic()
    _abeval("ingest", str(events), "--db", url)
    took["ingest"] = time.monotonic() - started
    started = time.monotonic()
    with open_store(url, read_only=True) as store:
        report = build_report(store, config.experiment, options)
    took["report"] = time.monotonic() - started
    with open_store(str(duck), read_only=True) as store:
        expected = build_report(store, config.experiment, options).to_dict()
    got = report.to_dict()
    html = out / f"{config.experiment}.spark.html"
    html.write_text(render_html(report), encoding="utf-8")
    (out / f"{config.experiment}.spark.json").write_text(
        json.dumps(got, indent=2, allow_nan=False), encoding="utf-8"
    )
    print(f"spark-demo: report from Spark in {html} (and .json)")
    print(f"spark-demo: ingest on Spark {took['ingest']:.1f} s, report {took['report']:.1f} s")
    differences: list[str] = []
    compared, worst = compare(expected, got, "", differences)
    if differences:
        print(f"spark-demo: the Spark report differs from DuckDB's in {len(differences)} places:")
        for line in differences[:10]:
            print(f"  {line}")
        return 1
    print(
        f"spark-demo: the Spark report equals the DuckDB report: {compared:,} numbers compared, "
        f"largest relative difference {worst:.1e} (tolerance {TOLERANCE:g})"
    )
    return 0


def _abeval(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "abeval", *args], check=True)


def compare(a: Any, b: Any, path: str, differences: list[str]) -> tuple[int, float]:
    """Walk two report documents; return how many numbers were compared and the
    largest relative difference, and add every difference to ``differences``."""
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        counts = [compare(a[k], b[k], f"{path}.{k}", differences) for k in a if k not in VOLATILE]
        return sum(c for c, _ in counts), max((w for _, w in counts), default=0.0)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        counts = [compare(x, y, f"{path}[{i}]", differences) for i, (x, y) in pairs]
        return sum(c for c, _ in counts), max((w for _, w in counts), default=0.0)
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        gap = abs(a - b) / max(abs(a), abs(b)) if a != b else 0.0
        if not math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-12):
            differences.append(f"{path}: {a!r} (DuckDB) != {b!r} (Spark)")
        return 1, gap if abs(a - b) > 1e-12 else 0.0
    if a != b:
        differences.append(f"{path}: {a!r} (DuckDB) != {b!r} (Spark)")
    return 0, 0.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
