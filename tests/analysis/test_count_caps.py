"""Capping a built-in count metric (docs/metrics.md#outlier-capping): the cap makes a
capped copy of the count for that metric alone. Checked against numpy's quantile
and clip on per-user values written here from the generated rows: the pooled cap,
the capped means, the capped CTR numerator, CUPED on the uncapped pre-period
clicks, the segments and the daily series; CTR unchanged by a cap on clicks per
user; PostgreSQL equal to DuckDB; the CLI's formats, the saved configuration and
the one-line error for a proportion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from cap_formats import check_cap_formats
from ingest_store import store_of
from test_postgres_report import assert_same
from typer.testing import CliRunner

from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport, OnlineMetricResult
from abeval.cli import app
from abeval.store import open_store
from abeval.store.ingest import ingest_file

runner = CliRunner()

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,device"
USERS = 150  # per arm
ARMS = ("control", "treatment")


@dataclass(frozen=True)
class User:
    arm: str
    device: str
    impressions: tuple[int, int]  # on day 1 and on day 2 after the exposure
    clicks: tuple[int, int]
    pre_clicks: int  # in the 14 days before the exposure


def _users() -> list[User]:
    """Heavy-tailed clicks (a few users click dozens of times), correlated with the
    pre-period clicks, a little more in the treatment."""
    rng = np.random.default_rng(24)
    out = []
    for arm, lift in (("control", 1.0), ("treatment", 1.15)):
        for _ in range(USERS):
            activity = rng.lognormal(0.0, 1.0)
            pre = int(rng.poisson(2 * activity))
            imps = (int(rng.integers(1, 6)), int(rng.integers(0, 6)))
            clicks = (int(rng.poisson(1.5 * activity * lift)), int(rng.poisson(activity * lift)))
            device = str(rng.choice(["mobile", "desktop"]))
            out.append(User(arm, device, imps, clicks, pre))
    return out


USERS_DATA = _users()


def _csv(path: Path) -> Path:
    rows = [HEADER]
    for i, u in enumerate(USERS_DATA):
        uid = f"u{i}"
        for j in range(u.pre_clicks):
            rows.append(
                f"cnt,{u.arm},{uid},2024-05-05T09:{j // 60:02d}:{j % 60:02d},click,{uid}-p,i1,,,"
            )
        rows.append(f"cnt,{u.arm},{uid},2024-05-10T08:00:00,exposure,,,,,{u.device}")
        for day, (n_imp, n_click) in enumerate(zip(u.impressions, u.clicks, strict=True)):
            ts = f"2024-05-1{day}T1{day}"
            rows += [
                f"cnt,{u.arm},{uid},{ts}:00:{k:02d},impression,{uid}-{day},i{k},{k + 1},,"
                for k in range(n_imp)
            ]
            rows += [
                f"cnt,{u.arm},{uid},{ts}:{10 + k // 60:02d}:{k % 60:02d},click,{uid}-{day},i0,,,"
                for k in range(n_click)
            ]
    path.write_text("\n".join(rows) + "\n")
    return path


def column(arm: str, what: str, device: str | None = None) -> np.ndarray:
    """Per user of ``arm`` (and ``device``): clicks, impressions or pre-period clicks."""
    users = [u for u in USERS_DATA if u.arm == arm and device in (None, u.device)]
    values = {
        "clicks": [sum(u.clicks) for u in users],
        "impressions": [sum(u.impressions) for u in users],
        "pre_clicks": [u.pre_clicks for u in users],
    }[what]
    return np.array(values, float)


def pooled_cap(quantile: float) -> float:
    """The cap as docs/metrics.md defines it: the quantile (linear interpolation) of
    the per-user clicks of every analysed user, both arms pooled."""
    return float(np.quantile(np.concatenate([column(a, "clicks") for a in ARMS]), quantile))


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> str:
    return store_of(_csv(tmp_path_factory.mktemp("cnt") / "cnt.csv"))


def _report(db: str, **options: object) -> ExperimentReport:
    given: dict[str, object] = {"offline": False, "cuped_days": 0, **options}
    with open_store(db, read_only=True) as store:
        return build_report(store, "cnt", ReportOptions(**given))  # type: ignore[arg-type]


def _result(report: ExperimentReport, name: str) -> OnlineMetricResult:
    return next(m for m in report.metrics if m.metric == name and m.arm == "treatment")


def _welch_se(c: np.ndarray, t: np.ndarray) -> float:
    return float(np.sqrt(c.var(ddof=1) / len(c) + t.var(ddof=1) / len(t)))


def test_clicks_per_user_capped_and_ctr_unchanged(duck: str) -> None:
    cap = pooled_cap(0.9)
    plain = _report(duck)
    capped = _report(duck, caps=(("clicks_per_user", 0.9),))
    clipped = {a: np.minimum(column(a, "clicks"), cap) for a in ARMS}
    assert cap < max(column(a, "clicks").max() for a in ARMS)  # the cap binds
    r = _result(capped, "clicks_per_user")
    assert r.control.value == pytest.approx(clipped["control"].mean(), rel=1e-12)
    assert r.treatment.value == pytest.approx(clipped["treatment"].mean(), rel=1e-12)
    diff = clipped["treatment"].mean() - clipped["control"].mean()
    assert r.comparison.absolute.effect == pytest.approx(diff, rel=1e-9)
    se = _welch_se(clipped["control"], clipped["treatment"])
    assert r.comparison.absolute.se == pytest.approx(se, rel=1e-9)
    # What the report says of the cap.
    (info,) = capped.caps
    assert (info.variable, info.metrics, info.quantile) == ("clicks", ("clicks_per_user",), 0.9)
    assert info.cap == pytest.approx(cap, rel=1e-12)
    above = {a: int((column(a, "clicks") > cap).sum()) for a in ARMS}
    assert info.users_capped == above and info.users_capped_total == sum(above.values()) > 0
    # CTR reads the raw clicks: the same numbers with and without the cap.
    ctr, ctr_plain = _result(capped, "ctr"), _result(plain, "ctr")
    raw = column("treatment", "clicks").sum() / column("treatment", "impressions").sum()
    assert ctr.treatment.value == pytest.approx(raw, rel=1e-12)
    # (to DuckDB's parallel sums: two reports may differ in the last bits; a capped
    # click would move CTR far more than 1e-9)
    assert_same(ctr.comparison.to_dict(), ctr_plain.comparison.to_dict())
    assert_same(ctr.treatment.to_dict(), ctr_plain.treatment.to_dict())
    assert_same(ctr.control.to_dict(), ctr_plain.control.to_dict())
    # The uncapped clicks per user differ from the capped ones.
    assert _result(plain, "clicks_per_user").treatment.value == pytest.approx(
        column("treatment", "clicks").mean(), rel=1e-12
    )


def test_a_capped_ratio_caps_its_numerator_only(duck: str) -> None:
    """``--cap ctr=0.95``: Σ min(clicks, cap) / Σ impressions, the delta method on the
    capped clicks; clicks per user keep the raw clicks."""
    cap = pooled_cap(0.95)
    report = _report(duck, caps=(("ctr", 0.95),))
    r = _result(report, "ctr")
    for arm, value in (("control", r.control), ("treatment", r.treatment)):
        m, d = np.minimum(column(arm, "clicks"), cap), column(arm, "impressions")
        assert value.value == pytest.approx(m.sum() / d.sum(), rel=1e-12)
        assert value.denominator == d.sum()

    def ratio_var(arm: str) -> float:
        m, d = np.minimum(column(arm, "clicks"), cap), column(arm, "impressions")
        lin = (m - m.sum() / d.sum() * d) / d.mean()
        return float(lin.var(ddof=1) / len(m))

    se = np.sqrt(ratio_var("control") + ratio_var("treatment"))
    assert r.comparison.absolute.se == pytest.approx(se, rel=1e-9)
    (info,) = report.caps
    assert (info.variable, info.metrics) == ("clicks", ("ctr",))
    cpu = _result(report, "clicks_per_user")
    assert cpu.treatment.value == pytest.approx(column("treatment", "clicks").mean(), rel=1e-12)


def test_cuped_adjusts_the_capped_clicks_with_the_pre_period(duck: str) -> None:
    """CUPED on the capped clicks per user: y = min(clicks, cap), x = the pre-period
    clicks as they are (the covariate is not capped), θ over both arms pooled."""
    cap = pooled_cap(0.9)
    report = _report(duck, caps=(("clicks_per_user", 0.9),), cuped_days=14)
    r = _result(report, "clicks_per_user")
    assert r.comparison.cuped
    y = {a: np.minimum(column(a, "clicks"), cap) for a in ARMS}
    x = {a: column(a, "pre_clicks") for a in ARMS}
    ys, xs = np.concatenate([y[a] for a in ARMS]), np.concatenate([x[a] for a in ARMS])
    theta = np.cov(ys, xs)[0, 1] / xs.var(ddof=1)
    adj = {a: y[a] - theta * x[a] for a in ARMS}
    assert r.comparison.absolute.effect == pytest.approx(
        adj["treatment"].mean() - adj["control"].mean(), rel=1e-9
    )
    assert r.comparison.absolute.se == pytest.approx(
        _welch_se(adj["control"], adj["treatment"]), rel=1e-9
    )


def test_segments_daily_sequential_and_power_read_the_capped_copy(duck: str) -> None:
    cap = pooled_cap(0.9)
    caps = (("clicks_per_user", 0.9),)
    report = _report(duck, caps=caps, primary=("clicks_per_user",), segment="device")
    for s in report.segments:
        c = np.minimum(column("control", "clicks", s.value), cap)
        t = np.minimum(column("treatment", "clicks", s.value), cap)
        assert s.comparison.absolute.effect == pytest.approx(t.mean() - c.mean(), rel=1e-9)
    assert {s.value for s in report.segments} == {"desktop", "mobile"}
    # The last day's cumulative lift is the whole test's (same cap, same users).
    last = [p for p in report.daily if p.metric == "clicks_per_user"][-1]
    assert last.relative_lift == pytest.approx(
        _result(report, "clicks_per_user").comparison.relative.effect, rel=1e-9
    )
    # The first day alone: the capped day-1 clicks (the cap of the whole test).
    first = next(p for p in report.daily if p.metric == "clicks_per_user")
    day1 = {
        a: np.minimum([u.clicks[0] for u in USERS_DATA if u.arm == a], cap).mean() for a in ARMS
    }
    assert first.day_lift == pytest.approx(day1["treatment"] / day1["control"] - 1, rel=1e-9)
    # Sequential: the same point estimate, a wider (always-valid) interval than the
    # fixed-horizon one (the report's reference: no plan is recorded, so it shows
    # the always-valid one too).
    seq = _report(duck, caps=caps, primary=("clicks_per_user",), sequential=True)
    always = _result(seq, "clicks_per_user")
    fixed = _result(report, "clicks_per_user").reference_fixed_horizon
    assert fixed is not None and fixed.method == "welch"
    assert always.comparison.absolute.effect == pytest.approx(fixed.absolute.effect)
    lo, hi = always.comparison.absolute.ci or (0.0, 0.0)
    flo, fhi = fixed.absolute.ci or (0.0, 0.0)
    assert hi - lo > fhi - flo
    # Power from the capped variance: the control's variance of the capped clicks.
    (power,) = [p for p in report.power if p.metric == "clicks_per_user"]
    capped_var = np.minimum(column("control", "clicks"), cap).var(ddof=1)
    assert power.detectable.baseline_variance == pytest.approx(capped_var, rel=1e-9)


CONVERSION_ERROR = (
    "Error: --cap 'conversion=0.9': cannot cap 'conversion': a proportion is 0 or 1 per "
    "user; metrics that can be capped: ctr, revenue_per_user, clicks_per_user, "
    "purchases_per_user, impressions_per_user, aov\n"
)


@pytest.mark.parametrize("command", [["report", "-e", "cnt"], ["experiment", "set", "cnt"]])
def test_cli_refuses_a_capped_proportion(duck: str, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--db", duck, "--cap", "conversion=0.9"])
    assert result.exit_code == 2
    assert (result.stdout, result.stderr) == ("", CONVERSION_ERROR)


def test_saved_cap_in_every_format(tmp_path: Path) -> None:
    db = store_of(_csv(tmp_path / "cnt.csv"))
    recorded = runner.invoke(
        app, ["experiment", "set", "cnt", "--db", db, "--cap", "clicks_per_user=0.9"]
    )
    assert recorded.exit_code == 0, recorded.stderr
    args = ["report", "-e", "cnt", "--db", db, "--no-offline", "--cuped-days", "0"]
    cap = pooled_cap(0.9)
    page = tmp_path / "cnt.html"
    doc = check_cap_formats(args, page, "clicks", "clicks_per_user", 0.9, cap)
    assert doc["caps"][0]["metrics"] == ["clicks_per_user"]
    assert doc["settings"]["caps"] == {"clicks_per_user": 0.9}
    assert doc["settings"]["sources"]["caps"] == "record"
    # ``power`` plans from the recorded cap too.
    power = ["power", "-e", "cnt", "--db", db, "--metric", "clicks_per_user", "--cuped-days", "0"]
    planned = runner.invoke(app, [*power, "-f", "json"])
    (row,) = json.loads(planned.stdout)
    clipped = np.minimum(column("control", "clicks"), cap)
    assert row["detectable"]["baseline_mean"] == pytest.approx(clipped.mean(), rel=1e-12)
    assert row["detectable"]["baseline_variance"] == pytest.approx(clipped.var(ddof=1), rel=1e-9)


@pytest.mark.postgres
def test_postgres_equals_duckdb(duck: str, tmp_path: Path, postgres_database: str) -> None:
    options = {
        "caps": (("clicks_per_user", 0.9), ("ctr", 0.95), ("purchases_per_user", 0.99)),
        "cuped_days": 14,
        "primary": ("clicks_per_user", "ctr"),
        "segment": "device",
    }
    with open_store(postgres_database) as store:
        ingest_file(store, _csv(tmp_path / "cnt.csv"))
        pg = build_report(store, "cnt", ReportOptions(offline=False, **options))  # type: ignore[arg-type]
    dk = _report(duck, **options)
    assert [(c.variable, c.metrics, c.users_capped) for c in pg.caps] == [
        (c.variable, c.metrics, c.users_capped) for c in dk.caps
    ]
    for a, b in zip(pg.caps, dk.caps, strict=True):
        assert a.cap == pytest.approx(b.cap, rel=1e-12)
    for a, b in zip(pg.metrics, dk.metrics, strict=True):
        assert (a.metric, a.comparison.status) == (b.metric, b.comparison.status)
        _close(a.comparison.absolute.effect, b.comparison.absolute.effect)
        _close(a.comparison.absolute.se, b.comparison.absolute.se)
    for sa, sb in zip(pg.segments, dk.segments, strict=True):
        _close(sa.comparison.absolute.effect, sb.comparison.absolute.effect)


def _close(a: float | None, b: float | None) -> None:
    """Equal to 1e-9, or both undefined (a metric with no purchases)."""
    assert a == b if a is None or b is None else a == pytest.approx(b, rel=1e-9, abs=1e-15)


def test_the_spark_store_reads_the_same_copies() -> None:
    """The copies are plain SQL: the Spark translation of every query that reads
    them keeps them (the Spark store runs these queries; ``make test-spark`` runs it)."""
    from abeval.analysis.capping import copies
    from abeval.store.backends.spark.dialect import to_spark
    from abeval.store.sql.online_caps import cap_values_sql
    from abeval.store.sql.online_daily import daily_moments_sql
    from abeval.store.sql.online_moments import arm_moments_sql
    from abeval.store.sql.online_pass import online_ctes
    from abeval.store.sql.online_segments import segment_moments_sql
    from abeval.store.sql.online_variables import BUILTIN

    variables = BUILTIN.plus(copies((("clicks_per_user", 0.9), ("ctr", 0.95))))
    caps = {"cap_clicks_per_user": 7.0, "cap_ctr": 9.0}
    for query in (
        arm_moments_sql(14, caps=caps, variables=variables),
        segment_moments_sql(14, caps=caps, variables=variables),
        daily_moments_sql(14, caps=caps, own_day=True, variables=variables),
        cap_values_sql("cap_ctr", 0.95, online_ctes(14, variables=variables), variables),
    ):
        spark = to_spark(query)
        assert "cap_clicks_per_user" in spark or "cap_ctr" in spark
        assert "LEAST(" in spark or "PERCENTILE(" in spark
