"""Time ``abeval report --no-offline`` with team-defined metrics recorded against
the same report on the same events without them.

The baseline is the built-in report on a simulated store (``bench_report``'s);
the variant is a copy of that store with five recorded metrics over its own event
types (a proportion, a count, a sum with a cap, a ratio and a count filtered on the
``device`` attribute), all summed in the report's one pass over the events. Both
run as subprocesses, interleaved; the script prints the medians and their ratio,
and with ``--record`` appends them to ``benchmarks/RESULTS.md``.

    nice -n 10 python benchmarks/bench_team_metrics.py --rows 1000000 --runs 5 --record

The built-in metrics' SQL is the same text as before team-defined metrics existed
(the built-ins are defined as the same data), so the baseline is what the report
cost before.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_report import build_store, report_command, variant_table  # noqa: E402
from measure import publish  # noqa: E402

METRICS = """\
[click_rate]
kind = "proportion"
event = "click"

[clicks_seen]
kind = "mean"
event = "click"

[spend]
kind = "mean"
event = "purchase"
value = "sum"
cap = 0.99

[spend_per_order]
kind = "ratio"
numerator = { event = "purchase", value = "sum" }
denominator = { event = "purchase" }

[mobile_clicks]
kind = "mean"
event = "click"
where = { device = "mobile" }
"""


def with_metrics(db: Path) -> Path:
    """A copy of ``db`` with :data:`METRICS` recorded."""
    copy = db.with_name(db.stem + "-team.duckdb")
    shutil.copyfile(db, copy)
    toml = db.with_name("team-metrics.toml")
    toml.write_text(METRICS)
    subprocess.run(
        [sys.executable, "-m", "abeval", "metrics", "add", str(toml), "--db", str(copy)],
        check=True,
        cwd=HERE.parent,
    )
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    db = build_store(args.rows)
    team = with_metrics(db)
    try:
        variants = {
            "built-in": report_command(db, "--no-offline"),
            "with 5 team metrics": report_command(team, "--no-offline"),
        }
        title = f"Team-defined metrics in the report ({args.rows:,} rows, {args.runs} runs)"
        lines = variant_table(title, variants, args.runs)
    finally:
        team.unlink(missing_ok=True)
    publish(lines, args.record)


if __name__ == "__main__":
    main()
