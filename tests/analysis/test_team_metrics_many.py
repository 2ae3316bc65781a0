"""Many team-defined metrics (issue 37, item 5): the report asks the engine only for
the covariances its metrics read, so its statements grow linearly with the recorded
metrics, and the numbers it gives stay those of numpy on the rows."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from team_log import EXP, METRICS_TOML, team_log
from test_forecast_cli import _write

from abeval.analysis.metric_records import add_metrics
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport
from abeval.analysis.team_metrics import read_catalog
from abeval.store import open_store
from abeval.store.ingest import ingest_file
from abeval.store.sql.online_moments import GROUP_SIZE, arm_moments, arm_moments_sql, groups
from abeval.store.sql.online_pass import online_ctes
from abeval.store.sql.online_sums import online_sums_sql

DEVICES = ("mobile", "desktop")
#: Metrics added to the six of ``METRICS_TOML``: a mean, a proportion and a ratio, in turn.
EXTRA = 54
CUPED_DAYS = 14


def _many(count: int) -> str:
    out = []
    for i in range(count):
        device = DEVICES[(i // 3) % 2]
        if i % 3 == 0:
            body = f'kind = "mean"\nevent = "play"\nwhere = {{ device = "{device}" }}'
        elif i % 3 == 1:
            body = f'kind = "proportion"\nevent = "add_to_cart"\nwhere = {{ device = "{device}" }}'
        else:
            body = (
                'kind = "ratio"\nnumerator = { event = "add_to_cart", value = "sum" }\n'
                f'denominator = {{ event = "add_to_cart" }}\nwhere = {{ device = "{device}" }}'
            )
        out.append(f"[x{i:02d}]\n{body}\n")
    return "\n".join(out)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    folder = tmp_path_factory.mktemp("many")
    rows = team_log()
    events = _write(folder / "events.csv", rows)  # type: ignore[arg-type]
    (folder / "metrics.toml").write_text(METRICS_TOML + "\n" + _many(EXTRA))
    db = folder / "s.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, events)
        add_metrics(store, folder / "metrics.toml")
    return db, rows


def _pairs_expected(kinds: list[str]) -> tuple[int, int]:
    """Covariances of the per-arm moments and of the daily series, counted from the
    definitions: every two of the 10 built-in variables (5, and their pre-period
    copies) and of the 5 built-in daily ones; then per team metric, each of its
    variables with its own copy (a mean: 1 variable; a proportion: 2, the count and
    its indicator), and a ratio's numerator and denominator with each other and
    with each other's copies (4 more, 1 more in the daily series)."""
    per_arm = {"mean": 1, "proportion": 2, "ratio": 2 + 4}
    daily = {"mean": 0, "proportion": 0, "ratio": 1}
    return (
        math.comb(10, 2) + sum(per_arm[k] for k in kinds),
        math.comb(5, 2) + sum(daily[k] for k in kinds),
    )


def test_the_engine_is_asked_only_for_the_covariances_read(
    many: tuple[Path, list[dict[str, str]]],
) -> None:
    db, _ = many
    with open_store(str(db), read_only=True) as store, store.connect() as conn:
        catalog = read_catalog(conn)
        assert len(catalog.definitions) == 6 + EXTRA
        kinds = [d.kind for d in catalog.definitions.values()]
        per_arm, daily = _pairs_expected(kinds)
        variables = catalog.variables
        sql = arm_moments_sql(CUPED_DAYS, variables=variables)
        assert sql.count("COVAR_SAMP(") == per_arm
        assert sql.count("VAR_SAMP(") - sql.count("COVAR_SAMP(") == len(variables.all_names)
        moments = arm_moments(conn, EXP, CUPED_DAYS, variables=variables)
    assert set(moments) == {"control", "treatment"}
    for m in moments.values():
        assert len(m.cross) == len(variables.all_names) + per_arm
    # the daily series' covariances (post-exposure only), each series its own
    base = online_ctes(CUPED_DAYS, variables=variables)
    daily_sql = online_sums_sql(CUPED_DAYS, base=base, variables=variables)
    for series in ("own__", "day__"):
        products = re.findall(rf"SUM\({series}(\w+) \* {series}(\w+) - ", daily_sql)
        assert sum(a != b for a, b in products) == daily


def _values(rows: list[dict[str, str]], device: str) -> dict[str, dict[str, np.ndarray]]:
    """Per arm, per analysed user: add_to_cart count and value on ``device`` after the
    first exposure and in the ``CUPED_DAYS`` before it, and the plays on ``device``
    after it."""
    first: dict[str, np.datetime64] = {}
    arm_of: dict[str, str] = {}
    for r in rows:
        if r["event_type"] == "exposure":
            ts = np.datetime64(r["ts"])
            if r["user_id"] not in first or ts < first[r["user_id"]]:
                first[r["user_id"]], arm_of[r["user_id"]] = ts, r["arm"]
    names = ("n", "v", "pre_n", "pre_v", "plays", "pre_plays")
    values = {u: dict.fromkeys(names, 0.0) for u in first}
    for r in rows:
        u = r["user_id"]
        if u not in first or r["device"] != device:
            continue
        ts = np.datetime64(r["ts"])
        if ts >= first[u]:
            phase = ""
        elif ts >= first[u] - np.timedelta64(CUPED_DAYS, "D"):
            phase = "pre_"
        else:
            continue
        if r["event_type"] == "add_to_cart":
            values[u][f"{phase}n"] += 1
            values[u][f"{phase}v"] += float(r["value"])
        elif r["event_type"] == "play":
            values[u][f"{phase}plays"] += 1
    return {
        arm: {k: np.array([values[u][k] for u in sorted(first) if arm_of[u] == arm]) for k in names}
        for arm in ("control", "treatment")
    }


def _report(db: Path, primary: tuple[str, ...]) -> ExperimentReport:
    options = ReportOptions(cuped_days=CUPED_DAYS, offline=False, primary=primary)
    with open_store(str(db), read_only=True) as store:
        return build_report(store, EXP, options)


def test_numbers_of_a_few_metrics_equal_numpy(many: tuple[Path, list[dict[str, str]]]) -> None:
    """Among 60 metrics: a ratio's sums, variances and covariances (post and
    pre-period, all that its CUPED estimate reads), a mean's and a proportion's,
    each against numpy on the rows."""
    db, rows = many
    report = _report(db, ("x00", "x01", "x02"))
    catalog = report.catalog
    stats = report.methodology.sufficient_statistics
    mobile = _values(rows, "mobile")
    ratio, mean, share = catalog["x02"], catalog["x00"], catalog["x01"]
    assert (ratio.kind, mean.kind, share.kind) == ("ratio", "mean", "proportion")
    for arm, per in mobile.items():
        got = stats[arm]
        n = per["n"].size
        assert got["n"] == n
        columns = {
            ratio.numerator: per["v"],
            ratio.denominator: per["n"],
            f"pre_{ratio.numerator}": per["pre_v"],
            f"pre_{ratio.denominator}": per["pre_n"],
            mean.numerator: per["plays"],
            f"pre_{mean.numerator}": per["pre_plays"],
            share.numerator: (per["n"] > 0).astype(float),
            f"pre_{share.numerator}": (per["pre_n"] > 0).astype(float),
        }
        for name, x in columns.items():
            assert got["sum"][name] == pytest.approx(x.sum(), rel=1e-12, abs=1e-12)
        products = got["centred_cross_products"]
        read = [
            (ratio.numerator, ratio.denominator),
            (ratio.numerator, f"pre_{ratio.numerator}"),
            (ratio.numerator, f"pre_{ratio.denominator}"),
            (ratio.denominator, f"pre_{ratio.numerator}"),
            (ratio.denominator, f"pre_{ratio.denominator}"),
            (f"pre_{ratio.numerator}", f"pre_{ratio.denominator}"),
            (mean.numerator, f"pre_{mean.numerator}"),
            (share.numerator, f"pre_{share.numerator}"),
            *((name, name) for name in columns),
        ]
        for a, b in read:
            want = float(np.cov(columns[a], columns[b], ddof=1)[0, 1] * (n - 1))
            key = f"{a}*{b}" if f"{a}*{b}" in products else f"{b}*{a}"
            assert products.get(key, 0.0) == pytest.approx(want, rel=1e-9, abs=1e-9), key
        # no covariance of two metrics' variables: none is read
        assert f"{ratio.numerator}*{mean.numerator}" not in products
    result = next(m for m in report.metrics if m.metric == "x00" and m.arm == "treatment")
    assert result.control.value == pytest.approx(mobile["control"]["plays"].mean(), rel=1e-12)
    assert result.treatment.value == pytest.approx(mobile["treatment"]["plays"].mean(), rel=1e-12)
    r = next(m for m in report.metrics if m.metric == "x02" and m.arm == "treatment")
    c, t = mobile["control"], mobile["treatment"]
    assert r.control.value == pytest.approx(c["v"].sum() / c["n"].sum(), rel=1e-12)
    assert r.treatment.value == pytest.approx(t["v"].sum() / t["n"].sum(), rel=1e-12)


@pytest.mark.slow
def test_sigterm_is_honoured_within_a_second(
    many: tuple[Path, list[dict[str, str]]], tmp_path: Path
) -> None:
    """SIGTERM at several moments of a report with 200 more metrics: the process
    ends within a second each time, with 143 (or 0 when it had finished)."""
    db, _ = many
    big = tmp_path / "big.duckdb"
    big.write_bytes(db.read_bytes())
    (tmp_path / "more.toml").write_text(_many(200).replace("[x", "[y"))
    with open_store(str(big)) as store:
        add_metrics(store, tmp_path / "more.toml")
    command = [sys.executable, "-m", "abeval", "report", "-e", EXP, "--db", str(big)]
    command += ["--format", "json", "--no-offline"]
    for delay in (1.0, 2.0, 3.0, 4.0):
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(delay)
        sent = time.perf_counter()
        os.kill(child.pid, signal.SIGTERM)
        code = child.wait(timeout=30)
        took = time.perf_counter() - sent
        assert code in (143, 0), child.stderr.read() if child.stderr else code
        assert took < 1.0, (delay, took)
        if child.stderr:
            child.stderr.close()


def test_many_metrics_are_summed_in_parts_that_keep_each_metric_whole(
    many: tuple[Path, list[dict[str, str]]],
) -> None:
    """Statements of a bounded size (planning them is what grows faster than their
    columns): the built-in variables in the first part, each metric's in one part."""
    db, _ = many
    with open_store(str(db), read_only=True) as store, store.connect() as conn:
        catalog = read_catalog(conn)
    variables = catalog.variables
    parts = groups(variables)
    assert len(parts) > 1
    names = [n for p in parts for n in p.names]
    assert sorted(names) == sorted(variables.names)  # each once
    assert set(parts[0].names) >= {"impressions", "clicks", "purchases", "revenue", "converted"}
    part_of = {n: i for i, p in enumerate(parts) for n in p.names}
    for metric in catalog.metrics.values():
        own = [metric.numerator, *([metric.denominator] if metric.denominator else [])]
        source = dict(variables.indicators).get(metric.numerator)
        own += [source] if source else []
        assert len({part_of[n] for n in own}) == 1, metric.name
    assert all(len(p.apart) <= GROUP_SIZE for p in parts)
    assert groups(catalog.variables, size=10_000) == [variables]
