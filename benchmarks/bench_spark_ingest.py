"""``abeval ingest --db sc://...`` of a file several times the Connect server's
driver memory: it loads, with both sides' memory bounded (issue 23, item 5).

    python benchmarks/bench_spark_ingest.py --spark-url sc://127.0.0.1:PORT --lab LAB \\
        --file /tmp/events_13M.csv [--upload connect] [--record]

The cluster is one started by scripts/spark/start.sh with a small driver
(``DRIVER_MEM=512m``); ``--lab`` is its folder (for the pid files). The ingest
runs once, in its own process; measured: wall time, the abeval process's peak
RSS (``wait4``), and the resident memory of the Spark Connect server (the driver)
and of the whole cluster (master, workers, executors), sampled every 0.5 s, at
their highest; the driver's heap limit is read from its command line. Then the
store is asked how many rows ``events`` holds, and the summary's accounting is
checked: rows read = inserted + duplicates + rejected, and inserted = the rows
the store gained. ``--upload connect`` sends the rows through Spark Connect
(``ABEVAL_SPARK_UPLOAD=connect``) instead of writing them as Parquet here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_spark import cluster_pids, rss_mib  # noqa: E402
from measure import describe, machine, publish, run_measured  # noqa: E402


class Peaks:
    """The highest resident memory of the driver and of the cluster, every 0.5 s."""

    def __init__(self, lab: Path) -> None:
        self.lab, self.driver, self.cluster = lab, 0.0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _driver_pids(self) -> list[int]:
        return [int((self.lab / "run" / "pids" / "connect.pid").read_text().strip())]

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.driver = max(self.driver, rss_mib(self._driver_pids()))
            self.cluster = max(self.cluster, rss_mib(cluster_pids(self.lab)))

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def driver_heap(lab: Path) -> str:
    """The ``-Xmx`` of the Connect server's JVM."""
    pid = (lab / "run" / "pids" / "connect.pid").read_text().strip()
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    heaps = [a.decode()[4:] for a in args if a.startswith(b"-Xmx")]
    return heaps[-1] if heaps else "?"


def events_rows(url: str) -> int:
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        if not session.catalog.tableExists("events"):
            return 0
        return int(session.sql("SELECT count(*) FROM events").collect()[0][0])
    finally:
        session.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark-url", required=True)
    parser.add_argument("--lab", type=Path, required=True)
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--upload", choices=("auto", "connect"), default="auto")
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    info = machine(("duckdb", "pyspark", "pyarrow"))
    env = {"ABEVAL_SPARK_UPLOAD": args.upload}
    before = events_rows(args.spark_url)
    heap = driver_heap(args.lab)
    command = [sys.executable, "-m", "abeval", "ingest", "--db", args.spark_url, "-f", "json"]
    prefix = ["nice", "-n", str(args.nice)] if args.nice else []
    load = os.getloadavg()
    with Peaks(args.lab) as peaks:
        run = run_measured([*prefix, *command, str(args.file)], args.timeout, env=env)
    after = events_rows(args.spark_url)
    size = args.file.stat().st_size / 2**20
    lines = [
        f"## Spark ingest of a file larger than the driver (issue 23, item 5), {info['date']}",
        "",
        f"Machine: {describe(info)}; load average before the run "
        f"{load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}.",
        f"`python benchmarks/bench_spark_ingest.py --upload {args.upload}`: "
        f"{args.file.name}, {size:,.0f} MiB; the Connect server's heap -Xmx{heap}; one run.",
        "",
    ]
    if run.code != 0:
        reason = run.err.strip().splitlines()[-1:] or ["?"]
        lines.append(f"- **failed** (exit {run.code}) after {run.seconds:.0f} s: {reason[0]}")
    else:
        summary = json.loads(run.out)
        summary = summary["files"][0]
        read, inserted = summary["rows_read"], summary["inserted"]
        others = summary["duplicates"] + summary["rejected"]
        lines += [
            f"- rows read {read:,} = inserted {inserted:,} + duplicates "
            f"{summary['duplicates']:,} + rejected {summary['rejected']:,}: "
            f"{'yes' if read == inserted + others else 'NO'}; events gained "
            f"{after - before:,} rows ({'= inserted' if after - before == inserted else 'NOT'})",
        ]
    lines += [
        f"- wall {run.seconds:.1f} s; abeval's peak RSS {run.rss_mib:,.0f} MiB",
        f"- the Connect server (driver) at most {peaks.driver:,.0f} MiB resident; "
        f"the whole cluster at most {peaks.cluster:,.0f} MiB",
    ]
    publish(lines, args.record)
    if run.code != 0:
        print(re.sub(r"\s+$", "", run.err)[-3000:], file=sys.stderr)


if __name__ == "__main__":
    main()
