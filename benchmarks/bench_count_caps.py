"""Time ``abeval report --no-offline`` with one cap on a built-in count metric
(``--cap clicks_per_user=0.99``) against the same report without a cap, on the same
store.

The cap adds one per-user variable to the report (a copy of the clicks, with its
pre-period copy) and one query for the pooled quantile; the pass over the events is
the same. Both run as subprocesses, interleaved; the script prints the medians and
their ratio, and with ``--record`` appends them to ``benchmarks/RESULTS.md``.

    nice -n 10 python benchmarks/bench_count_caps.py --rows 1000000 --runs 7 --record
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_report import build_store, report_command, variant_table  # noqa: E402
from measure import publish  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    db = build_store(args.rows)
    variants = {
        "no cap": report_command(db, "--no-offline"),
        "--cap clicks_per_user=0.99": report_command(
            db, "--no-offline", "--cap", "clicks_per_user=0.99"
        ),
    }
    title = f"A cap on a count metric in the report ({args.rows:,} rows, {args.runs} runs)"
    publish(variant_table(title, variants, args.runs), args.record)


if __name__ == "__main__":
    main()
