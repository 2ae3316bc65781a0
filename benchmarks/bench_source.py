"""Time ``abeval report`` on a Parquet file read in place against its ingested copy.

The events of ``gen_events.py`` (Parquet, default 2M rows) are written once more
under other column names and event-type values (``uid``, ``event_time``,
``kind = 'view'`` ...). One DuckDB store ingests the original file (the copy);
another holds only a source over the renamed file (``abeval source add``). The
default report (``--format json``) then runs on each, as subprocesses,
interleaved, ``--runs`` times; the script prints the medians, the peak RSS of
each side, the one-off costs (ingest, source add) and checks that the two
reports' metrics agree to a relative 1e-9. With ``--record`` it appends that to
``benchmarks/RESULTS.md``.

    python benchmarks/bench_source.py --rows 2000000 --runs 3 --record
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))
from gen_events import generate, size_label  # noqa: E402
from measure import Measured, describe, machine, run_measured  # noqa: E402

EXPERIMENT = "home-reco-v2"
TIMEOUT = 1800.0
RENAME = (
    "SELECT experiment AS exp, arm AS variant, user_id AS uid, ts AS event_time, "
    "CASE event_type WHEN 'impression' THEN 'view' WHEN 'click' THEN 'clk' "
    "WHEN 'purchase' THEN 'buy' ELSE event_type END AS kind, request_id AS req, item_id, "
    "position AS pos, value AS revenue, event_id, propensity, device AS dev FROM read_parquet"
)
ADD = [
    "--experiment-column", "exp",
    "--map", "arm=variant,user_id=uid,ts=event_time,event_type=kind,request_id=req,"
    "position=pos,value=revenue",
    "--event-type", "impression=view,click=clk,purchase=buy",
    "--attributes", "device=dev",
]  # fmt: skip


def abeval(*args: str) -> list[str]:
    return [sys.executable, "-m", "abeval", *args]


def ok(m: Measured, what: str) -> Measured:
    if m.code != 0:
        raise SystemExit(f"{what} failed ({m.code}): {m.err.strip()[-500:]}")
    return m


def close(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ (numbers: beyond a relative 1e-9)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in a for d in close(a[k], b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in close(x, y, path)]
    if isinstance(a, float) and isinstance(b, int | float):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [path]
    return [] if a == b else [path]


def prepare(rows: int, work: Path) -> tuple[Path, Path, dict[str, float]]:
    """The two stores, and the seconds of the one-off steps."""
    import duckdb

    source = generate(rows, "parquet").path
    work.mkdir(parents=True, exist_ok=True)
    renamed = work / f"renamed_{size_label(rows)}.parquet"
    copy, in_place = work / "copy.duckdb", work / "in_place.duckdb"
    for f in (copy, in_place, Path(f"{copy}.wal"), Path(f"{in_place}.wal")):
        f.unlink(missing_ok=True)
    con = duckdb.connect()
    con.execute(f"COPY ({RENAME}('{source}')) TO '{renamed}' (FORMAT parquet)")
    con.close()
    ingest = ok(
        run_measured(abeval("ingest", str(source), "--db", str(copy), "-q"), TIMEOUT), "ingest"
    )
    add = ok(
        run_measured(
            abeval("source", "add", "lake", "--table", str(renamed), *ADD, "--db", str(in_place)),
            TIMEOUT,
        ),
        "source add",
    )
    return copy, in_place, {"ingest": ingest.seconds, "source add": add.seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    work = DATA / "source"
    copy, in_place, once = prepare(args.rows, work)
    times: dict[str, list[Measured]] = {"ingested copy": [], "read in place": []}
    reports: dict[str, Any] = {}
    for i in range(args.runs):
        sides = [("ingested copy", copy), ("read in place", in_place)]
        for name, db in sides if i % 2 == 0 else sides[::-1]:
            out = work / f"{name.replace(' ', '_')}.json"
            argv = abeval("report", "-e", EXPERIMENT, "--format", "json", "-o", str(out))
            times[name].append(ok(run_measured([*argv, "--db", str(db)], TIMEOUT), name))
            reports[name] = json.loads(out.read_text())
    differ = close(reports["ingested copy"]["metrics"], reports["read in place"]["metrics"])
    info = machine()
    lines = [
        f"### Report on a table read in place, {size_label(args.rows)} events ({info['date']})",
        "",
        describe(info),
        "",
        "| store | report median s | min s | peak RSS MiB |",
        "|---|---|---|---|",
    ]
    for name, runs in times.items():
        secs = [m.seconds for m in runs]
        rss = statistics.median(m.rss_mib for m in runs)
        lines.append(f"| {name} | {statistics.median(secs):.2f} | {min(secs):.2f} | {rss:.0f} |")
    lines += [
        "",
        f"One-off: ingest {once['ingest']:.1f} s; source add (checks and one counting pass) "
        f"{once['source add']:.1f} s. Metrics agree to 1e-9: "
        f"{'yes' if not differ else 'NO ' + ', '.join(differ[:5])}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.record:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
