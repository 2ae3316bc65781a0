"""The second reliability campaign rerun (issue 38, item 9): the reproducers of the
issue's "Why", over many randomised trials, on DuckDB and PostgreSQL, counted.

    .venv/bin/python benchmarks/campaign.py --trials 1000 [--record] [--no-postgres]

Surfaces (each trial is one command line or one store, through the CLI in process):

- ``attributes``: random attribute names (``$os``, ``/device``, ``$.x``, quotes,
  spaces, ``~``, dots and random characters) in a team metric's ``where`` and in
  ``--segment``; the counts against the truth computed here from the rows written.
- ``split``: a recorded split of random (extreme) weights that leaves an arm out;
  the report must be INVALID, or the split refused in one line.
- ``truncated``: a .gz/.zst/.bz2/.xz file cut at a random byte, with and without
  ``--on-error skip``: one line and nothing loaded, or the whole lines before the
  cut loaded and the cut said.
- ``bounds``: the accepted-bounds values (``--cuped-days``, ``--split`` 1e308, a
  history ``online_se`` of 1e-300, ``--offline-lift 1e300``, a target ``position``
  of 3e9, deep JSON, ``/dev/full``, 300-character names), scaled at random.
- ``team``: a recorded team metric's definition broken at random; the report must
  exit 0 with that row ``failed`` and the other metric's numbers right.
- ``secrets``: a PostgreSQL URL with a password and a token, the server down or
  the password wrong, through every command that opens a store; no output may
  show either.

Counted: trials, tracebacks (an exception escaped, or "Traceback" shown), wrong
answers with exit 0, rows lost (loaded fewer rows than the lines the command says
it loaded, or loaded rows silently), secrets shown. Each must be 0.

The helpers are the tests' (``tests/``): the PostgreSQL server
(``tests/pgserver.py``), the compressors (``tests/store/test_compressed_inputs.py``),
the store with an arm outside the split (``tests/cli/test_srm_split.py``) and the
check that a result is one line or a result (``tests/analysis/test_numeric_fuzz.py``).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The shared test helpers, and the test modules whose cases the campaign reuses.
for folder in ("tests", "tests/store", "tests/analysis", "tests/cli"):
    sys.path.insert(0, str(ROOT / folder))

from pgserver import PostgresServer  # noqa: E402
from test_compressed_inputs import SUFFIX, _compress  # noqa: E402
from test_numeric_fuzz import one_line_or_result  # noqa: E402
from test_srm_split import EXPERIMENT as SPLIT_EXPERIMENT  # noqa: E402
from test_srm_split import _store as split_store  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from abeval.cli import app  # noqa: E402

runner = CliRunner()
COUNTS = ("trials", "tracebacks", "wrong_exit_0", "rows_lost", "secrets_shown")
PASSWORD = "Cmp4ignSecretPw"
TOKEN = "Cmp4ignT0ken"


class Tally:
    """The campaign's counts, per surface and engine, and the first few failures."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], Counter[str]] = {}
        self.failures: list[str] = []

    def add(self, surface: str, engine: str, what: str, detail: str = "") -> None:
        self.counts.setdefault((surface, engine), Counter())[what] += 1
        if what != "trials" and len(self.failures) < 40:
            self.failures.append(f"{surface}/{engine}: {what}: {detail[:400]}")

    def total(self, what: str) -> int:
        return sum(c[what] for c in self.counts.values())


def invoke(tally: Tally, surface: str, engine: str, args: list[str]) -> Any:
    """One trial's command; a traceback counted (the result is still returned)."""
    result = runner.invoke(app, args)
    tally.add(surface, engine, "trials")
    try:
        one_line_or_result(result)
    except AssertionError as exc:
        tally.add(surface, engine, "tracebacks", f"{' '.join(args)}: {exc}")
    return result


# -- attributes -----------------------------------------------------------------

FIXED_NAMES = ["$os", "/device", "$.device", "dev ice", 'de"vice', "a.b", "~t/x", "$", "$[0]"]
CHARACTERS = "abcxyz$/.~ []*'\"-_:@#"


def random_names(rng: random.Random, k: int) -> list[str]:
    names = set(rng.sample(FIXED_NAMES, k // 2))
    while len(names) < k:
        names.add("".join(rng.choice(CHARACTERS) for _ in range(rng.randint(1, 8))).strip() or "q")
    return sorted(names)


def attributes_trial(tally: Tally, engine: str, db: str, tmp: Path, rng: random.Random) -> None:
    names = [n for n in random_names(rng, 6) if n.strip() == n]
    users = 8
    value = {  # (arm, user, play, k) -> "m" or "d", at random
        (arm, u, p, k): rng.choice("md")
        for arm in "ab"
        for u in range(users)
        for p in range(-1, 2)
        for k in range(len(names))
    }
    events = tmp / "attributes.csv"
    with events.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["experiment", "arm", "user_id", "ts", "event_type", *names])
        for arm in "ab":
            for u in range(users):
                for p in range(-1, 2):
                    kind = "exposure" if p < 0 else "play"
                    row = [value[(arm, u, p, k)] for k in range(len(names))]
                    out.writerow(["x", arm, f"{arm}{u}", f"2024-05-01T0{p + 1}:00:00", kind, *row])
    metrics = tmp / "attributes.toml"
    with metrics.open("w") as f:
        for k, name in enumerate(names):
            key = name.replace("\\", "\\\\").replace('"', '\\"')
            f.write(f'[plays_{k}]\nkind = "mean"\nevent = "play"\nwhere = {{ "{key}" = "m" }}\n\n')
    loaded = invoke(tally, "attributes", engine, ["ingest", str(events), "--db", db, "-q"])
    added = invoke(tally, "attributes", engine, ["metrics", "add", str(metrics), "--db", db])
    if loaded.exit_code or added.exit_code:
        return  # a name refused in one line at `metrics add` is allowed
    primary = ",".join(f"plays_{k}" for k in range(len(names)))
    base = ["report", "-e", "x", "--control", "a", "-f", "json", "--no-offline", "--db", db]
    result = invoke(tally, "attributes", engine, [*base, "--primary", primary])
    if result.exit_code:
        tally.add("attributes", engine, "wrong_exit_0", f"report refused: {result.stderr}")
        return
    doc = json.loads(result.stdout)
    for m in doc["metrics"]:
        if not m["metric"].startswith("plays_"):
            continue
        k = int(m["metric"].split("_")[1])
        for arm, role in (("a", "control"), ("b", "treatment")):
            true = sum(value[(arm, u, p, k)] == "m" for u in range(users) for p in (0, 1)) / users
            if abs((m[role]["value"] or 0.0) - true) > 1e-9:
                tally.add(
                    "attributes", engine, "wrong_exit_0", f"{names[k]!r} {arm}: {m[role]} != {true}"
                )
    k = rng.randrange(len(names))
    seg = invoke(
        tally, "attributes", engine, [*base, "--primary", "plays_0", "--segment", names[k]]
    )
    if seg.exit_code == 0:
        found = {
            s["value"]: (s["control_users"], s["treatment_users"])
            for s in json.loads(seg.stdout)["segments"]
        }
        per_value: dict[str, list[int]] = {}
        for arm_i, arm in enumerate("ab"):
            for u in range(users):
                per_value.setdefault(value[(arm, u, -1, k)], [0, 0])[arm_i] += 1
        # a value seen in one arm only is no comparable segment: the report leaves it out
        both = {v: tuple(c) for v, c in per_value.items() if min(c) > 0}
        if {v: c for v, c in found.items() if min(c) > 0} != both:
            tally.add(
                "attributes",
                engine,
                "wrong_exit_0",
                f"segment {names[k]!r}: {found} != {per_value}",
            )


# -- split ------------------------------------------------------------------------


def split_trial(tally: Tally, db: str, rng: random.Random) -> None:
    """``db`` has the arm ``rogue`` (10% of users) outside any split given here."""
    weights = [10 ** rng.uniform(-300, 308) if rng.random() < 0.5 else rng.uniform(0.1, 100)]
    weights.append(weights[0] if rng.random() < 0.5 else 10 ** rng.uniform(-300, 308))
    split = f"control={weights[0]:.6g},treatment={weights[1]:.6g}"
    done = invoke(
        tally,
        "split",
        "duckdb",
        ["experiment", "set", SPLIT_EXPERIMENT, "--split", split, "--db", db],
    )
    if done.exit_code:
        return  # refused in one line (checked by invoke)
    args = ["report", "-e", SPLIT_EXPERIMENT, "-f", "json", "--no-offline", "--db", db]
    result = invoke(tally, "split", "duckdb", args)
    if result.exit_code == 0:
        decisions = {d["decision"] for d in json.loads(result.stdout)["decisions"]}
        if decisions != {"invalid"}:
            tally.add("split", "duckdb", "wrong_exit_0", f"{split}: {decisions}")


# -- truncated --------------------------------------------------------------------


def truncated_trial(tally: Tally, tmp: Path, rng: random.Random, data: bytes, rows: int) -> None:
    codec = rng.choice(sorted(SUFFIX))
    packed = _compress(codec, data)
    size = rng.randint(1, len(packed) - 1)
    cut = tmp / f"cut.csv{SUFFIX[codec]}"
    cut.write_bytes(packed[:size])
    db = tmp / f"t{rng.randrange(10**9)}.duckdb"
    skip = rng.random() < 0.5
    args = ["ingest", str(cut), "--db", str(db), *(["--on-error", "skip"] if skip else [])]
    result = invoke(tally, "truncated", "duckdb", args)
    loaded = _rows(db)
    if result.exit_code == 0 and not skip:
        tally.add("truncated", "duckdb", "wrong_exit_0", f"{codec} cut at {size}: exit 0")
    if result.exit_code and loaded:
        tally.add("truncated", "duckdb", "rows_lost", f"{codec}: refused but {loaded} rows loaded")
    if result.exit_code == 0 and skip:
        if "stream ends at byte" not in result.stderr and loaded < rows:
            tally.add("truncated", "duckdb", "rows_lost", f"{codec} cut at {size}: no word")
        said = [
            int(w.replace(",", "")) for w in _between(result.stderr, "rows read: ", " inserted")
        ]
        if said and said[0] != loaded:
            tally.add(
                "truncated", "duckdb", "rows_lost", f"{codec}: said {said[0]}, {loaded} in store"
            )
        if loaded != len(set(_first_users(db))) or _first_users(db) != {
            f"u{i}" for i in range(loaded)
        }:
            tally.add("truncated", "duckdb", "rows_lost", f"{codec}: not the file's first rows")


def _between(text: str, before: str, after: str) -> list[str]:
    out = []
    for part in text.split(before)[1:]:
        out.append(part.split(after)[0].strip())
    return out


def _rows(db: Path) -> int:
    return len(_first_users(db))


def _first_users(db: Path) -> set[str]:
    import duckdb

    if not db.exists():
        return set()
    con = duckdb.connect(str(db), read_only=True)
    try:
        if not con.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_name = 'events'"
        ).fetchall():
            return set()
        return {r[0] for r in con.execute("SELECT user_id FROM events").fetchall()}
    finally:
        con.close()


# -- bounds -----------------------------------------------------------------------


def bounds_trial(tally: Tally, demo: str, tmp: Path, rng: random.Random) -> None:
    big = f"{10 ** rng.uniform(9, 308):.6g}"
    tiny = f"{10 ** -rng.uniform(200, 320):.6g}"
    history = tmp / "history.csv"
    history.write_text(
        "experiment,signal,offline_lift,offline_se,online_lift,online_se,users\n"
        + "".join(
            f"e{i},s,0.0{i},0.002,0.0{i},{tiny if i == 0 else '0.004'},20000\n" for i in range(1, 6)
        )
    )
    deep = tmp / "deep.json"
    deep.write_text("[" * rng.randint(1000, 100000) + "]" * 10)
    choices: list[list[str]] = [
        ["experiment", "set", "home-reco-v2", "--cuped-days", str(int(float(big)))],
        ["experiment", "set", "home-reco-v2", "--split", f"control={big},treatment={big}"],
        ["forecast", "--history", str(history), "--offline-lift", "0.01", "--offline-se", "0.002"],
        ["forecast", "--history", str(history), "--offline-lift", big, "--offline-se", "0.002"],
        ["experiment", "record", str(deep)],
        ["report", "-e", "home-reco-v2", "--no-offline", "-o", "/dev/full"],
        [
            "report",
            "-e",
            "home-reco-v2",
            "--no-offline",
            "-o",
            str(tmp / ("n" * rng.randint(256, 400))),
        ],
    ]
    args = rng.choice(choices)
    invoke(tally, "bounds", "duckdb", [*args, "--db", demo])
    if args[0] == "experiment" and args[1] == "set":
        invoke(
            tally,
            "bounds",
            "duckdb",
            ["report", "-e", "home-reco-v2", "--no-offline", "-f", "json", "--db", demo],
        )
        runner.invoke(
            app, ["experiment", "set", "home-reco-v2", "--cuped-days", "14", "--db", demo]
        )


# -- team metrics failing ---------------------------------------------------------

BROKEN = [
    "{",
    "[]",
    "null",
    '"text"',
    '{"kind": "median", "numerator": {"event": "play"}}',
    '{"kind": "mean", "numerator": {"event": 5}}',
    '{"kind": "mean", "numerator": {"event": "play"}, "cap": 7}',
    '{"kind": "mean", "numerator": {"event": "play"}, "where": [1]}',
    '{"kind": "mean", "numerator": {"event": "play"}, "future": true}',
    '{"kind": "ratio", "numerator": {"event": "play"}}',
]


def team_trial(
    tally: Tally, engine: str, db: str, rng: random.Random, truth: dict[str, float]
) -> None:
    stored = rng.choice(BROKEN) if rng.random() < 0.7 else "{" * rng.randint(1, 50)
    _execute(db, "UPDATE metric_definitions SET definition = :d WHERE name = 'plays_1'", stored)
    args = ["report", "-e", "x", "--control", "a", "-f", "json", "--no-offline", "--db", db]
    result = invoke(
        tally, "team", engine, [*args, "--primary", "plays_0", "--secondary", "plays_1"]
    )
    if result.exit_code:
        tally.add("team", engine, "wrong_exit_0", f"{stored}: whole report failed: {result.stderr}")
        return
    rows = {m["metric"]: m for m in json.loads(result.stdout)["metrics"]}
    if rows["plays_1"]["status"] != "failed":
        tally.add("team", engine, "wrong_exit_0", f"{stored}: row not failed")
    got = (rows["plays_0"]["control"]["value"], rows["plays_0"]["treatment"]["value"])
    if got != (truth["a"], truth["b"]):
        tally.add("team", engine, "wrong_exit_0", f"{stored}: plays_0 {got} != {truth}")
    listed = invoke(tally, "team", engine, ["metrics", "--db", db])
    if listed.exit_code or "plays_1" not in listed.stdout:
        tally.add("team", engine, "wrong_exit_0", f"{stored}: metrics listing {listed.output}")


def _execute(db: str, statement: str, value: str) -> None:
    if "://" not in db:
        import duckdb

        con = duckdb.connect(db)
        con.execute(statement.replace(":d", "$d"), {"d": value})
        con.close()
        return
    from sqlalchemy import create_engine, text

    engine = create_engine(db)
    with engine.begin() as conn:
        conn.execute(text(statement), {"d": value})
    engine.dispose()


# -- secrets ----------------------------------------------------------------------


def secrets_trial(
    tally: Tally, server: PostgresServer | None, tmp: Path, rng: random.Random
) -> None:
    port = server.port if server is not None and rng.random() < 0.5 else 1
    url = f"postgresql+psycopg://abeval:{PASSWORD}@127.0.0.1:{port}/x?sslpassword={TOKEN}"
    events = tmp / "s.csv"
    events.write_text("experiment,arm,user_id,ts,event_type\nx,a,u1,2024-05-01T00:00:00,exposure\n")
    args = rng.choice(
        [
            ["ingest", str(events)],
            ["report", "-e", "x"],
            ["metrics"],
            ["experiments"],
            ["power", "-e", "x"],
            ["agreement"],
            ["experiment", "set", "x", "--control", "a"],
        ]
    )
    result = invoke(tally, "secrets", "postgresql", [*args, "--db", url])
    shown = (
        result.output
        + result.stderr
        + "".join(p.read_text(errors="replace") for p in tmp.glob("reports/*"))
    )
    if PASSWORD in shown or TOKEN in shown:
        tally.add("secrets", "postgresql", "secrets_shown", shown)


# -- the campaign -----------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials in all (about)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--only", help="run only these surfaces (comma-separated)")
    parser.add_argument("--record", action="store_true", help="append the counts to RESULTS.md")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the server is stopped
    rng = random.Random(args.seed)
    tally = Tally()
    started = time.monotonic()
    server = None if args.no_postgres else PostgresServer().start()
    try:
        with tempfile.TemporaryDirectory() as name:
            only = set(args.only.split(",")) if args.only else None
            run(tally, Path(name), rng, server, args.trials, only)
    finally:
        if server is not None:
            server.stop()
    report(tally, args, time.monotonic() - started)


def run(
    tally: Tally,
    tmp: Path,
    rng: random.Random,
    server: PostgresServer | None,
    trials: int,
    only: set[str] | None = None,
) -> None:
    import os

    os.chdir(tmp)
    engines: list[tuple[str, Callable[[], str]]] = [
        ("duckdb", lambda: str(tmp / f"a{rng.randrange(10**9)}.duckdb"))
    ]
    if server is not None:
        engines.append(("postgresql", server.create_database))
    share = max(1, trials // 12)

    def wanted(surface: str) -> int:
        return 1 if only is None or surface in only else 0

    for engine, new in engines:  # ~5 commands a store
        for _ in range(max(1, share // 5) * wanted("attributes")):
            attributes_trial(tally, engine, new(), tmp, rng)

    split_dir = tmp / "split"
    split_dir.mkdir()
    built = split_store(split_dir, None) if wanted("split") else ""
    for _ in range(share * wanted("split")):
        db = str(tmp / "split_trial.duckdb")
        shutil.copy(built, db)
        split_trial(tally, db, rng)

    rows = 3000
    data = (
        b"experiment,arm,user_id,ts,event_type\n"
        + "".join(
            f"x,{'ab'[i % 2]},u{i},2024-05-01T00:00:00,exposure\n" for i in range(rows)
        ).encode()
    )
    for _ in range(share * 2 * wanted("truncated")):
        truncated_trial(tally, tmp, rng, data, rows)

    demo_db = tmp / "demo" / "demo.duckdb"  # a small demo store: a report in seconds
    demo = ["demo", "--out-dir", str(demo_db.parent), "--users", "3000"]
    if wanted("bounds"):
        subprocess.run([sys.executable, "-m", "abeval", *demo], check=False, capture_output=True)
    if demo_db.exists():
        for _ in range(share * 2):
            bounds_trial(tally, str(demo_db), tmp, rng)

    for engine, new in engines if wanted("team") else []:
        db = new()
        (tmp / "team.csv").write_text(
            "experiment,arm,user_id,ts,event_type\n"
            + "".join(
                f"x,{arm},{arm}{u},2024-05-01T0{p}:00:00,{'exposure' if p == 0 else 'play'}\n"
                for arm in "ab"
                for u in range(6)
                for p in range(0, 1 + (u % 3 if arm == "a" else u % 2 + 1))
            )
        )
        (tmp / "team.toml").write_text(
            '[plays_0]\nkind = "mean"\nevent = "play"\n\n'
            '[plays_1]\nkind = "proportion"\nevent = "play"\n'
        )
        runner.invoke(app, ["ingest", str(tmp / "team.csv"), "--db", db, "-q"])
        runner.invoke(app, ["metrics", "add", str(tmp / "team.toml"), "--db", db])
        truth = {"a": sum(u % 3 for u in range(6)) / 6, "b": sum(u % 2 + 1 for u in range(6)) / 6}
        for _ in range(share // len(engines) + 1):
            team_trial(tally, engine, db, rng, truth)

    for _ in range(share * 2 * wanted("secrets")):
        secrets_trial(tally, server, tmp, rng)


def report(tally: Tally, args: argparse.Namespace, seconds: float) -> None:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [
        f"## Reliability campaign rerun (issue 38, item 9) ({when})",
        "",
        f"Commit {commit}, seed {args.seed}, `python benchmarks/campaign.py --trials {args.trials}"
        f"{' --no-postgres' if args.no_postgres else ''}`, {seconds:.0f} s.",
        "",
        "| surface | engine | " + " | ".join(COUNTS) + " |",
        "|---|---|" + "---:|" * len(COUNTS),
    ]
    for (surface, engine), c in sorted(tally.counts.items()):
        lines.append(f"| {surface} | {engine} | " + " | ".join(str(c[k]) for k in COUNTS) + " |")
    lines.append("| **all** | | " + " | ".join(f"**{tally.total(k)}**" for k in COUNTS) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    for failure in tally.failures:
        print("  " + failure)
    if args.record:
        with (ROOT / "benchmarks" / "RESULTS.md").open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
