"""Time ``abeval report --format json`` against a hand-written DuckDB query.

The baseline is one DuckDB query, written by hand (:data:`BASELINE_SQL`), that
computes per arm what the default report's statistics need over the same events:

- the online sufficient statistics: users, and per-user sums, sums of squares
  and cross-products of impressions, clicks, purchases and revenue after
  exposure and over the 14-day pre-period;
- the replayed ranking metrics (precision, recall, AP, NDCG, MRR and hit rate
  at 5 and 10) per request, averaged per user, then the users, Σ and Σ² of the
  per-user values per arm, under the report's conventions (requests as lists,
  logged positions as ranks, purchase 2 / click 1 as relevance, lists without a
  relevant item left out of recall, AP, NDCG and MRR).

The baseline, ``abeval report --no-offline`` and the default report run as
subprocesses on the same store, interleaved, several times; the script prints
medians, the ratio to the baseline and each command's peak RSS, then the
fixed start-up cost (``abeval --help`` and the report on a store of a few
thousand events), and with ``--record`` appends them to ``benchmarks/RESULTS.md``.
Every report computes from the events: the summaries a report keeps in its store
(docs/architecture.md#kept-summaries) are deleted before each run (``--warm``
keeps them, so that the runs after the first read them).

    python benchmarks/bench_report.py --rows 10000000 --runs 3 --record

Targets (issue 13): report <= 2 x baseline + 1.5 s and peak RSS <= 1.5 GB at
10M events; ``abeval --help`` < 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))
from gen_events import parse_sizes, size_label  # noqa: E402
from measure import code_copy, describe, machine, run_measured  # noqa: E402

EXPERIMENT = "home-reco-v2"
KS = (5, 10)
TIMEOUT = 3600.0


def _ranking_columns() -> tuple[str, str, str]:
    """(per-list expressions, per-user means, per-arm sums) of the ranking metrics."""
    per_list, per_user, per_arm = [], [], []
    for k in KS:
        per_list += [
            f"CAST(h{k} AS DOUBLE) / {k} AS precision{k}",
            f"CASE WHEN r > 0 THEN CAST(h{k} AS DOUBLE) / r END AS recall{k}",
            f"CASE WHEN r > 0 THEN ap{k} / r END AS ap{k}",
            f"CASE WHEN r > 0 THEN dcg{k} / idcg{k} END AS ndcg{k}",
            f"CASE WHEN r > 0 THEN (CASE WHEN first_rel <= {k} THEN 1.0 / first_rel "
            f"ELSE 0.0 END) END AS mrr{k}",
            f"CASE WHEN h{k} > 0 THEN 1.0 ELSE 0.0 END AS hit_rate{k}",
        ]
        for m in ("precision", "recall", "ap", "ndcg", "mrr", "hit_rate"):
            per_user.append(f"AVG({m}{k}) AS {m}{k}")
            per_arm += [f"COUNT({m}{k})", f"SUM({m}{k})", f"SUM({m}{k} * {m}{k})"]
    return ", ".join(per_list), ", ".join(per_user), ", ".join(per_arm)


def _per_list_sums() -> str:
    cols = ["COUNT(*) AS r", "MIN(pos) AS first_rel"]
    for k in KS:
        cols += [
            f"COUNT(*) FILTER (WHERE pos <= {k}) AS h{k}",
            f"COALESCE(SUM(cum / pos) FILTER (WHERE pos <= {k}), 0) AS ap{k}",
            f"COALESCE(SUM(gain / LOG2(pos + 1)) FILTER (WHERE pos <= {k}), 0) AS dcg{k}",
            f"SUM(gain / LOG2(irank + 1)) FILTER (WHERE irank <= {k}) AS idcg{k}",
        ]
    return ", ".join(cols)


_PER_LIST, _PER_USER, _PER_ARM = _ranking_columns()

BASELINE_SQL = f"""
WITH ev AS (SELECT * FROM events WHERE experiment = '{EXPERIMENT}'),
arms AS (
    SELECT user_id, MIN(arm) AS arm, COUNT(DISTINCT arm) AS n_arms,
        MIN(ts) FILTER (WHERE event_type = 'exposure') AS t0
    FROM ev GROUP BY user_id
),
exposed AS (SELECT user_id, arm, t0 FROM arms WHERE n_arms = 1 AND t0 IS NOT NULL),
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
    FROM exposed x JOIN ev e USING (user_id)
    GROUP BY x.arm, x.user_id
),
online AS (
    SELECT arm, COUNT(*) AS users, SUM(imp), SUM(clk), SUM(pur), SUM(rev),
        SUM(imp * imp), SUM(clk * clk), SUM(clk * imp), SUM(rev * rev), SUM(pur * pur),
        SUM(rev * pur), SUM(pimp), SUM(pclk), SUM(clk * pclk), SUM(pclk * pclk)
    FROM per_user GROUP BY arm
),
relevance AS (
    SELECT request_id, item_id,
        MAX(CASE WHEN event_type = 'purchase' THEN 2.0 ELSE 1.0 END) AS gain
    FROM ev WHERE event_type IN ('click', 'purchase') AND request_id IS NOT NULL
        AND item_id IS NOT NULL
    GROUP BY request_id, item_id
),
shown AS (
    SELECT x.arm, e.request_id, MIN(e.user_id) AS user_id, e.item_id, MIN(e.position) AS pos
    FROM ev e JOIN exposed x USING (user_id)
    WHERE e.event_type = 'impression' AND e.ts >= x.t0
    GROUP BY x.arm, e.request_id, e.item_id
),
relevant AS (
    SELECT s.request_id, s.pos, r.gain,
        COUNT(*) OVER (PARTITION BY s.request_id ORDER BY s.pos) AS cum,
        ROW_NUMBER() OVER (PARTITION BY s.request_id ORDER BY r.gain DESC) AS irank
    FROM shown s JOIN relevance r USING (request_id, item_id)
),
rel_sums AS (SELECT request_id, {_per_list_sums()} FROM relevant GROUP BY request_id),
lists AS (
    SELECT l.arm, l.user_id, l.request_id, COALESCE(s.r, 0) AS r, s.first_rel,
        {", ".join(f"COALESCE(s.h{k}, 0) AS h{k}, s.ap{k}, s.dcg{k}, s.idcg{k}" for k in KS)}
    FROM (SELECT arm, request_id, MIN(user_id) AS user_id FROM shown GROUP BY arm, request_id) l
    LEFT JOIN rel_sums s USING (request_id)
),
list_values AS (SELECT arm, user_id, {_PER_LIST} FROM lists),
user_values AS (SELECT arm, user_id, {_PER_USER} FROM list_values GROUP BY arm, user_id),
ranking AS (SELECT arm, COUNT(*) AS users_with_lists, {_PER_ARM} FROM user_values GROUP BY arm)
SELECT * FROM online JOIN ranking USING (arm) ORDER BY arm
"""


def build_store(rows: int, data_dir: Path = DATA, code: Path | None = None) -> Path:
    """A store with about ``rows`` events from the simulator (cached in ``data_dir``);
    ``code``: ingested by that copy of abeval (a ``--before`` copy cannot read a
    store of a newer schema, so it gets its own, of the same file)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / f"{'before-' if code else ''}report-{rows}.duckdb"
    if db.exists():
        return db
    csv = data_dir / f"report-{rows}.csv"
    env = {**os.environ, "PYTHONPATH": str(code.resolve())} if code else None
    # In a subprocess: a child's peak RSS (wait4) starts from the launcher's.
    simulate = (
        "import sys; from abeval.simulate import SimulationConfig, users_for_rows, write_events; "
        "write_events(SimulationConfig(users=users_for_rows(int(sys.argv[1])), seed=11), "
        "sys.argv[2])"
    )
    if not csv.exists():
        subprocess.run([sys.executable, "-c", simulate, str(rows), str(csv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", str(db), "--quiet"],
        check=True,
        env=env,
    )
    return db


def report_difference(before: str, now: str) -> str:
    """The largest relative difference (to the larger magnitude, at least 1) between
    the numbers of two JSON reports (the same keys), or where their structure or
    words differ."""
    worst = 0.0

    def walk(a: object, b: object, where: str) -> str | None:
        nonlocal worst
        if isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return f"keys differ at {where}"
            kept = [k for k in a if k not in ("generated_at", "store")]
            found = (walk(a[k], b[k], f"{where}.{k}") for k in kept)
            return next((f for f in found if f), None)
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return f"lengths differ at {where}"
            found = (walk(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True)))
            return next((f for f in found if f), None)
        if isinstance(a, int | float) and isinstance(b, int | float):
            scale = max(abs(float(a)), abs(float(b)), 1.0)
            worst = max(worst, abs(float(a) - float(b)) / scale)
            return None
        when = ("time", "seconds", "_at")  # of the run or of each store's ingest
        return None if a == b or any(w in where for w in when) else f"{where} differs"

    found = walk(json.loads(before), json.loads(now), "")
    return found or f"{worst:.1e}"


def baseline_command(db: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import duckdb,json,sys; c=duckdb.connect(sys.argv[1], read_only=True); "
        "c.execute('SET enable_progress_bar = false'); "
        "r=c.execute(sys.argv[2]); n=[d[0] for d in r.description]; "
        "print(json.dumps([dict(zip(n, row)) for row in r.fetchall()], default=float))",
        str(db),
        BASELINE_SQL,
    ]


def report_command(db: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "abeval",
        "report",
        "-e",
        EXPERIMENT,
        "--db",
        str(db),
        "--format",
        "json",
        *extra,
    ]


def check_agreement(baseline_out: str, report_out: str, control: str = "control") -> float:
    """Largest difference between the baseline's replayed ranking means and the report's
    (the control and treatment values of each offline comparison)."""
    rows = {r["arm"]: r for r in json.loads(baseline_out)}
    worst, compared = 0.0, 0
    for v in json.loads(report_out)["offline"]:
        name, _, k = v["metric"].partition("@")
        col = f"{name.replace('map', 'ap')}{k}"
        for arm, value in ((control, v["control_value"]), (v["arm"], v["treatment_value"])):
            row = rows.get(arm, {})
            if f"sum({col})" in row and value is not None:
                worst = max(worst, abs(row[f"sum({col})"] / row[f"count({col})"] - value))
                compared += 1
    if compared < 2 * 6 * len(KS):
        raise SystemExit(f"only {compared} replayed means to compare with the baseline")
    return worst


def measure_runs(
    variants: dict[str, list[str]],
    runs: int,
    envs: dict[str, dict[str, str]] | None = None,
    prefix: list[str] | None = None,
    cold: bool = True,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str], dict[str, list[float]]]:
    """Each variant ``runs`` times, interleaved: wall seconds, peak RSS MiB, the last
    output, and CPU seconds (user + system of the child and its threads, from the
    children's rusage: on a loaded machine the steadier measure of the work done).
    ``cold``: every report computes from the events (:func:`forget_kept` first);
    else each run after the first reads the summaries the first kept."""
    import resource

    times: dict[str, list[float]] = {k: [] for k in variants}
    rss: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    outs: dict[str, str] = {}
    for _ in range(runs):
        for name, cmd in variants.items():
            env = (envs or {}).get(name)
            cwd = Path(env["PYTHONPATH"]) if env else HERE.parent  # `-m abeval` from there
            if cold:
                forget_kept(cmd)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            m = run_measured([*(prefix or []), *cmd], TIMEOUT, cwd=cwd, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if m.code != 0:
                raise SystemExit(f"{name} failed ({m.code}): {m.err.strip()[-1000:]}")
            times[name].append(m.seconds)
            rss[name].append(m.rss_mib)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            outs[name] = m.out
    return times, rss, outs, cpu


def forget_kept(cmd: list[str]) -> None:
    """Delete the kept summaries of the store a report command names (``--db``), in
    a subprocess (this process stays small: a child's peak RSS starts from it)."""
    if "report" not in cmd or "--db" not in cmd:
        return
    db = cmd[cmd.index("--db") + 1]
    forget = (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
        "c.execute('DELETE FROM kept_summaries'); c.close()"
    )
    subprocess.run([sys.executable, "-c", forget, db], check=True)


def variant_table(title: str, variants: dict[str, list[str]], runs: int) -> list[str]:
    """Each of ``variants`` (the first is the baseline) run ``runs`` times, interleaved:
    a section of benchmarks/RESULTS.md with the median wall seconds, their ratio to
    the baseline's, the median CPU seconds and the peak RSS."""
    times, rss, _, cpu = measure_runs(variants, runs)
    base = statistics.median(times[next(iter(variants))])
    lines = [
        f"## {title}",
        "",
        f"Machine: {describe(machine())}.",
        "",
        "| report --no-offline | median s | ratio | CPU s | peak RSS MiB |",
        "|---|---|---|---|---|",
    ]
    for name in variants:
        median = statistics.median(times[name])
        lines.append(
            f"| {name} | {median:.2f} | {median / base:.2f} | "
            f"{statistics.median(cpu[name]):.2f} | {max(rss[name]):.0f} |"
        )
    return lines


def startup(runs: int, prefix: list[str] | None = None) -> list[str]:
    """``abeval --help`` and the report on a store of a few thousand events."""
    tiny = build_store(5_000)
    variants = {
        "`abeval --help`": [sys.executable, "-m", "abeval", "--help"],
        "`python -c pass` (the interpreter alone)": [sys.executable, "-c", "pass"],
        "report (default) on 5k events: the fixed start-up cost": report_command(tiny),
    }
    times, rss, _, cpu = measure_runs(variants, runs, prefix=prefix)
    lines = [
        "| command | median s | min s | median CPU s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in variants:
        t = times[name]
        lines.append(
            f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | "
            f"{statistics.median(cpu[name]):.3f} | {statistics.median(rss[name]):.0f} |"
        )
    return lines


# One report run in this process with every statement timed: the seconds, the
# resident memory after it and the peak so far (VmRSS, VmHWM), and its text.
STATEMENTS = r"""
import json, sys, time
from sqlalchemy import event
from sqlalchemy.engine import Engine

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0

log, started = [], []

@event.listens_for(Engine, "before_cursor_execute")
def before(*_):
    started.append(time.perf_counter())

@event.listens_for(Engine, "after_cursor_execute")
def after(conn, cursor, statement, *_):
    seconds = time.perf_counter() - started.pop()
    log.append([seconds, status("VmRSS"), status("VmHWM"), " ".join(statement.split())])

# DuckDB may run part of a statement while its rows are fetched: that time is
# the statement's too.
import duckdb_engine

def _fetching(name):
    def fetch(self, *args):
        t = time.perf_counter()
        try:
            return getattr(self._CursorWrapper__c, name)(*args)
        finally:
            if log:
                log[-1][0] += time.perf_counter() - t
    return fetch

for _name in ("fetchone", "fetchall", "fetchmany"):
    setattr(duckdb_engine.CursorWrapper, _name, _fetching(_name))

@event.listens_for(Engine, "handle_error")
def failed(context):
    seconds = time.perf_counter() - started.pop() if started else 0.0
    error = str(context.original_exception).splitlines()[0]
    log.append([seconds, status("VmRSS"), status("VmHWM"), "FAILED " + error + ": "
                + " ".join(str(context.statement).split())])

from abeval.cli import app
t0 = time.perf_counter()
try:
    app(sys.argv[2:], standalone_mode=False)
finally:
    total = time.perf_counter() - t0
    with open(sys.argv[1], "w") as f:
        json.dump({"total": total, "hwm": status("VmHWM"), "statements": log}, f)
"""


def statement_profile(db: Path, out: Path, top: int = 12, *extra: str) -> list[str]:
    """Run the report with every statement timed; its statements, slowest first:
    seconds, share of the run, resident memory after the statement and the peak so
    far (MiB), and the statement's start."""
    forget_kept(report_command(db, *extra))  # the report computes from the events
    cmd = [sys.executable, "-c", STATEMENTS, str(out), *report_command(db, *extra)[3:]]
    m = run_measured(cmd, GROWTH_TIMEOUT, cwd=HERE.parent)
    if m.code != 0:
        raise SystemExit(f"profiled report failed ({m.code}): {m.err.strip()[-1000:]}")
    return slowest_statements(out, top)


def slowest_statements(out: Path, top: int = 12) -> list[str]:
    """The statements STATEMENTS logged to ``out``, slowest first, as a table."""
    doc = json.loads(out.read_text())
    rows = sorted(doc["statements"], key=lambda r: -r[0])
    in_sql = sum(r[0] for r in rows)
    lines = [
        f"Report with every statement timed: {doc['total']:.1f} s, of which {in_sql:.1f} s in "
        f"{len(rows)} statements; peak RSS {doc['hwm']:.0f} MiB.",
        "",
        "| s | share | RSS after MiB | peak so far MiB | statement |",
        "|---:|---:|---:|---:|---|",
    ]
    for seconds, rss, hwm, sql in rows[:top]:
        lines.append(
            f"| {seconds:.1f} | {seconds / doc['total']:.0%} | {rss:.0f} | {hwm:.0f} "
            f"| {statement_name(sql)} |"
        )
    return lines


def statement_name(sql: str) -> str:
    """A statement told apart from the others: the table it creates, and the names of
    its last common table expressions (the shared ``exp_events``/``population`` left out)."""
    created = re.match(r"CREATE (?:TEMP |TEMPORARY )?TABLE (\w+)", sql)
    names = [n for n in re.findall(r"(\w+) AS \(", sql) if n.lower() not in _COMMON_CTES]
    text = f"`{created.group(1)}` " if created else ""
    shown = (f"({len(names) - 5} more) " if len(names) > 5 else "") + ", ".join(names[-5:])
    return text + (f"WITH {shown}" if names else f"`{sql[:60]}`")


_COMMON_CTES = {"exp_events", "population", "window_events"}


GROWTH_TIMEOUT = 4 * 3600.0


def growth(sizes: list[int], data_dir: Path, nice: int, keep: bool) -> list[str]:
    """Ingest of the generated CSV and the report, at each size: time, peak RSS and
    the most DuckDB spilled (the stores go to ``data_dir``, as do the CSV files)."""
    from gen_events import data_path

    spill = data_dir / "spill"
    spill.mkdir(parents=True, exist_ok=True)
    env = {"ABEVAL_TEMP_DIR": str(spill)}
    prefix = ["nice", "-n", str(nice)] if nice else []
    lines = [
        "| events | CSV | ingest s | ingest peak RSS MiB | ingest spill MiB | store MiB "
        "| report s | report peak RSS MiB | report spill MiB | --no-offline s "
        "| --no-offline peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rows in sizes:
        csv = data_path(rows, "csv", data_dir)
        if not csv.exists():
            gen = [sys.executable, str(HERE / "gen_events.py"), "--sizes", size_label(rows)]
            subprocess.run([*prefix, *gen, "--data-dir", str(data_dir)], check=True)
        events = json.loads(csv.with_name(csv.name + ".json").read_text())["rows"]
        db = data_dir / f"growth-{size_label(rows)}.duckdb"
        for old in (db, db.with_name(db.name + ".wal")):
            old.unlink(missing_ok=True)
        ingest = [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", str(db), "--quiet"]
        # The default report runs with every statement timed (STATEMENTS): its cost is
        # a clock read per statement, and one run at 100M gives both the totals and
        # where the time goes.
        timed = data_dir / f"statements-{size_label(rows)}.json"
        report = [sys.executable, "-c", STATEMENTS, str(timed), *report_command(db)[3:]]
        runs = {}
        for name, cmd in (
            ("ingest", ingest),
            ("report", report),
            ("no-offline", report_command(db, "--no-offline")),
        ):
            m = run_measured([*prefix, *cmd], GROWTH_TIMEOUT, HERE.parent, env, watch=spill)
            print(
                f"  {size_label(rows)} {name}: {m.seconds:.1f} s, {m.rss_mib:.0f} MiB, "
                f"spill {m.watched_mib:.0f} MiB, exit {m.code}",
                file=sys.stderr,
                flush=True,
            )
            if m.code != 0:
                log = data_dir / f"failed-{name}-{size_label(rows)}.log"
                log.write_text(m.err)
                raise SystemExit(f"{name} at {rows:,} failed ({m.code}); its stderr is in {log}")
            runs[name] = m
        i, r, n = runs["ingest"], runs["report"], runs["no-offline"]
        lines.append(
            f"| {events:,} | {csv.stat().st_size / 2**20:,.0f} MiB | {i.seconds:.1f} "
            f"| {i.rss_mib:,.0f} | {i.watched_mib:,.0f} | {db.stat().st_size / 2**20:,.0f} "
            f"| {r.seconds:.1f} | {r.rss_mib:,.0f} | {r.watched_mib:,.0f} | {n.seconds:.1f} "
            f"| {n.rss_mib:,.0f} |"
        )
        if not keep:
            db.unlink(missing_ok=True)
    for rows in sizes:
        timed = data_dir / f"statements-{size_label(rows)}.json"
        lines += ["", f"{size_label(rows)} events: {slowest_statements(timed)[0]}"]
        lines += ["", *slowest_statements(timed)[1:]]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    ap.add_argument(
        "--before",
        type=code_copy,
        help="a copy of the code before a change (git archive COMMIT | tar -x -C DIR): "
        "its default report is timed in the same runs",
    )
    ap.add_argument(
        "--growth",
        metavar="SIZES",
        type=parse_sizes,
        help="instead: ingest and report once at each size (e.g. 1M,10M,100M) from "
        "gen_events.py's CSV files in --data-dir",
    )
    ap.add_argument("--data-dir", type=Path, default=DATA, help="files and stores of --growth")
    ap.add_argument("--nice", type=int, default=0, help="run the commands under nice -n")
    ap.add_argument("--no-startup", action="store_true", help="leave out the start-up table")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="let the reports after the first read the summaries it kept (default: "
        "each report computes from the events, its store's kept summaries deleted first)",
    )
    ap.add_argument("--keep", action="store_true", help="keep --growth's stores")
    ap.add_argument(
        "--profile",
        type=Path,
        metavar="STORE",
        help="instead: time every statement of one default report on STORE",
    )
    args = ap.parse_args()
    if args.growth or args.profile:
        other(args)
        return
    db = build_store(args.rows, args.data_dir)
    base = "baseline: hand-written DuckDB query (online sums + replayed ranking metrics)"
    variants = {
        base: baseline_command(db),
        "abeval report --format json --no-offline": report_command(db, "--no-offline"),
        "abeval report --format json (default, with the replay)": report_command(db),
    }
    envs: dict[str, dict[str, str]] = {}
    if args.before:
        before = f"abeval report --format json (default), before: {args.before.name}"
        variants[before] = report_command(build_store(args.rows, args.data_dir, args.before))
        envs[before] = {"PYTHONPATH": str(args.before.resolve())}
    prefix = ["nice", "-n", str(args.nice)] if args.nice else []
    run_measured([*prefix, *variants[base]], TIMEOUT)  # warm the page cache
    times, rss, outs, cpu = measure_runs(variants, args.runs, envs, prefix, cold=not args.warm)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    b, b_cpu = med[base], med_cpu[base]
    info = machine()
    factor = 1.5 if args.rows >= 10_000_000 else 2.0  # issue 23, target 1
    lines = [
        f"### Report vs hand-written query, {args.rows:,} events "
        f"({info['date']}, {args.runs} runs, median)",
        "",
        f"Machine: {describe(info)}",
        "",
        f"| command | median s | min s | ratio to baseline | target {factor:g} x baseline + 1 s "
        "| median CPU s | CPU ratio | peak RSS MiB |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name, t in med.items():
        target = "" if name == base else ("met" if t <= factor * b + 1 else "MISSED")
        c = med_cpu[name]
        lines.append(
            f"| {name} | {t:.2f} | {min(times[name]):.2f} | {t / b:.2f} | {target} | "
            f"{c:.2f} | {c / b_cpu:.2f} | {statistics.median(rss[name]):.0f} |"
        )
    worst = check_agreement(
        outs[base], outs["abeval report --format json (default, with the replay)"]
    )
    lines += ["", f"Replayed ranking means, baseline vs report: largest difference {worst:.1e}."]
    if args.before:
        same = report_difference(outs[before], outs[list(variants)[2]])
        lines += [
            "",
            f"Every number of the report, before vs now: largest relative difference {same}.",
        ]
    if not args.no_startup:
        lines += ["", "Start-up:", "", *startup(max(args.runs, 5), prefix)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)


def other(args: argparse.Namespace) -> None:
    """``--growth`` or ``--profile``: print (and with ``--record`` append) the table."""
    info = machine()
    limit = os.environ.get("ABEVAL_MEMORY_LIMIT", "default")
    if args.growth:
        labels = ",".join(size_label(rows) for rows in args.growth)
        title = f"### Growth: ingest and report at {labels} events ({info['date']})"
        body = growth(args.growth, args.data_dir.resolve(), args.nice, args.keep)
    else:
        title = f"### Report statements on {args.profile.name} ({info['date']})"
        out = args.data_dir / "statements.json"
        body = statement_profile(args.profile.resolve(), out)
    lines = [title, "", f"Machine: {describe(info)}; ABEVAL_MEMORY_LIMIT {limit}", "", *body]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
