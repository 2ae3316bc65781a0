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

    python benchmarks/bench_report.py --rows 10000000 --runs 3 --record

Targets (issue 13): report <= 2 x baseline + 1.5 s and peak RSS <= 1.5 GB at
10M events; ``abeval --help`` < 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))
from measure import describe, machine, run_measured  # noqa: E402

EXPERIMENT = "home-reco-v2"
KS = (5, 10)
TIMEOUT = 900.0


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


def build_store(rows: int) -> Path:
    """A store with about ``rows`` events from the simulator (cached in data/)."""
    DATA.mkdir(exist_ok=True)
    db = DATA / f"report-{rows}.duckdb"
    if db.exists():
        return db
    csv = DATA / f"report-{rows}.csv"
    # In a subprocess: a child's peak RSS (wait4) starts from the launcher's.
    simulate = (
        "import sys; from abeval.simulate import SimulationConfig, users_for_rows, write_events; "
        "write_events(SimulationConfig(users=users_for_rows(int(sys.argv[1])), seed=11), "
        "sys.argv[2])"
    )
    subprocess.run([sys.executable, "-c", simulate, str(rows), str(csv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "abeval", "ingest", str(csv), "--db", str(db), "--quiet"],
        check=True,
    )
    return db


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
    variants: dict[str, list[str]], runs: int, envs: dict[str, dict[str, str]] | None = None
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    times: dict[str, list[float]] = {k: [] for k in variants}
    rss: dict[str, list[float]] = {k: [] for k in variants}
    outs: dict[str, str] = {}
    for _ in range(runs):
        for name, cmd in variants.items():
            env = (envs or {}).get(name)
            cwd = Path(env["PYTHONPATH"]) if env else HERE.parent  # `-m abeval` from there
            m = run_measured(cmd, TIMEOUT, cwd=cwd, env=env)
            if m.code != 0:
                raise SystemExit(f"{name} failed ({m.code}): {m.err.strip()[-1000:]}")
            times[name].append(m.seconds)
            rss[name].append(m.rss_mib)
            outs[name] = m.out
    return times, rss, outs


def startup(runs: int) -> list[str]:
    """``abeval --help`` and the report on a store of a few thousand events."""
    tiny = build_store(5_000)
    variants = {
        "`abeval --help`": [sys.executable, "-m", "abeval", "--help"],
        "`python -c pass` (the interpreter alone)": [sys.executable, "-c", "pass"],
        "report (default) on 5k events: the fixed start-up cost": report_command(tiny),
    }
    times, rss, _ = measure_runs(variants, runs)
    lines = ["| command | median s | min s | peak RSS MiB |", "|---|---:|---:|---:|"]
    for name in variants:
        t = times[name]
        lines.append(
            f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | "
            f"{statistics.median(rss[name]):.0f} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--record", action="store_true", help="append to benchmarks/RESULTS.md")
    ap.add_argument(
        "--before",
        type=Path,
        help="a copy of the code before a change (git archive COMMIT | tar -x -C DIR): "
        "its default report is timed in the same runs",
    )
    args = ap.parse_args()
    db = build_store(args.rows)
    base = "baseline: hand-written DuckDB query (online sums + replayed ranking metrics)"
    variants = {
        base: baseline_command(db),
        "abeval report --format json --no-offline": report_command(db, "--no-offline"),
        "abeval report --format json (default, with the replay)": report_command(db),
    }
    envs: dict[str, dict[str, str]] = {}
    if args.before:
        before = f"abeval report --format json (default), before: {args.before.name}"
        variants[before] = report_command(db)
        envs[before] = {"PYTHONPATH": str(args.before.resolve())}
    run_measured(variants[base], TIMEOUT)  # warm the page cache
    times, rss, outs = measure_runs(variants, args.runs, envs)
    med = {k: statistics.median(v) for k, v in times.items()}
    b = med[base]
    info = machine()
    lines = [
        f"### Report vs hand-written query, {args.rows:,} events "
        f"({info['date']}, {args.runs} runs, median)",
        "",
        f"Machine: {describe(info)}",
        "",
        "| command | median s | min s | ratio to baseline | target 2 x baseline + 1.5 s "
        "| peak RSS MiB |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, t in med.items():
        target = "" if name == base else ("met" if t <= 2 * b + 1.5 else "MISSED")
        lines.append(
            f"| {name} | {t:.2f} | {min(times[name]):.2f} | {t / b:.2f} | {target} | "
            f"{statistics.median(rss[name]):.0f} |"
        )
    worst = check_agreement(
        outs[base], outs["abeval report --format json (default, with the replay)"]
    )
    lines += ["", f"Replayed ranking means, baseline vs report: largest difference {worst:.1e}."]
    lines += ["", "Start-up:", "", *startup(max(args.runs, 5))]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
