"""Time ``abeval power --experiment`` and ``abeval agreement`` on the demo store,
before and after they read each experiment through its session (issue 22 item 2).

"Before" is the code of a git ref (default ``main``), unpacked into a scratch
folder and run with the same interpreter through ``PYTHONPATH``; "after" is this
checkout. The store is the one ``abeval demo`` writes (``demo/demo.duckdb``: the
demo experiment and its history of 12 experiments with recorded evaluations and
target probabilities), opened read-only by both sides. Each command runs
interleaved, before then after, ``--runs`` times; both sides must print the same
JSON (floats to 1e-9; the board's time stamp and the experiments' ``alpha``,
which only the new code writes, left out).

    abeval demo && python benchmarks/bench_session.py --db demo/demo.duckdb --runs 3 --record
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_power import EXPERIMENT, _same_rows, _unpack, interleaved, publish  # noqa: E402
from measure import REPO, describe, machine  # noqa: E402

COMMANDS = {
    "power": ["power", "--experiment", EXPERIMENT, "--json"],
    "agreement": ["agreement", "--format", "json", "-o", "-"],
}


def _comparable(text: str) -> str:
    """The JSON without what differs by design: the time stamp, the new ``alpha``."""
    data = json.loads(text)
    if isinstance(data, dict):
        data.pop("generated_at", None)
        for e in data.get("experiments", []):
            if isinstance(e, dict):
                e.pop("alpha", None)
    return json.dumps(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="the store abeval demo wrote")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default="main", help="git ref of the code before")
    parser.add_argument("--commands", default="power,agreement")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    db = args.db.resolve()
    load = [os.getloadavg()[0]]
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="abeval-bench-session-") as scratch:
        folder = Path(scratch)
        before_code = folder / "before"
        _unpack(args.before, before_code)
        sides = {"before": {"PYTHONPATH": str(before_code)}, "after": {"PYTHONPATH": str(REPO)}}
        for command in args.commands.split(","):
            argv = [sys.executable, "-m", "abeval", *COMMANDS[command], "--db", str(db)]
            times, _, outputs = interleaved(argv, sides, args.runs, folder, args.timeout)
            outputs = {side: _comparable(out) for side, out in outputs.items()}
            if not _same_rows(outputs["before"], outputs["after"]):
                for side, out in outputs.items():  # kept to see where they differ
                    (
                        Path(tempfile.gettempdir()) / f"bench-session-{command}-{side}.json"
                    ).write_text(out)
                raise SystemExit(f"before and after printed different {command} output")
            med = {side: statistics.median(t) for side, t in times.items()}
            runs = {s: ", ".join(f"{t:.2f}" for t in v) for s, v in times.items()}
            lines.append(
                f"- `abeval {' '.join(COMMANDS[command])}`: before median {med['before']:.2f} s "
                f"(runs {runs['before']}), after median {med['after']:.2f} s (runs "
                f"{runs['after']}); after / before **{med['after'] / med['before']:.2f}**; "
                "same output (floats to 1e-9)"
            )
            print(lines[-1], flush=True)
        load.append(os.getloadavg()[0])
    text = "\n".join(
        [
            f"### power --experiment and agreement through the session (issue 22 item 2), "
            f"the demo store, {args.runs} runs each, interleaved",
            "",
            f"- machine: {describe(machine())}; load average {load[0]:.1f} at the start, "
            f"{load[1]:.1f} at the end (1 min)",
            f"- before: {args.before}; after: this checkout",
            *lines,
            f"- command: `python benchmarks/bench_session.py --db demo/demo.duckdb "
            f"--runs {args.runs} --record`",
        ]
    )
    publish(text, args.record)


if __name__ == "__main__":
    main()
