"""Team-defined metrics (docs/metrics.md#team-defined-metrics) on a small log built
here: every recorded kind (proportion, mean count, mean sum, ratio, a ``where``
filter, a cap) against the same numbers re-derived with numpy from the rows, per
user from the first exposure, and the ratio's delta-method standard error from the
linearised per-user values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from team_log import EXP, METRICS_TOML, team_log
from test_forecast_cli import _write

from abeval.analysis.metric_records import add_metrics
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport, OnlineMetricResult
from abeval.errors import OptionError
from abeval.store import open_store
from abeval.store.ingest import ingest_file


def _per_user(rows: list[dict[str, str]]) -> dict[str, dict[str, np.ndarray]]:
    """Per arm, per variable, one value per analysed user (exposed; events at or
    after the user's first exposure)."""
    first = {}
    arm_of = {}
    for r in rows:
        if r["event_type"] == "exposure":
            ts = np.datetime64(r["ts"])
            if r["user_id"] not in first or ts < first[r["user_id"]]:
                first[r["user_id"]] = ts
                arm_of[r["user_id"]] = r["arm"]
    users = sorted(first)
    names = ("carts", "value", "mobile_plays")
    values = {u: dict.fromkeys(names, 0.0) for u in users}
    for r in rows:
        u = r["user_id"]
        if u not in first or np.datetime64(r["ts"]) < first[u]:
            continue
        if r["event_type"] == "add_to_cart":
            values[u]["carts"] += 1
            values[u]["value"] += float(r["value"])
        elif r["event_type"] == "play" and r["device"] == "mobile":
            values[u]["mobile_plays"] += 1
    out: dict[str, dict[str, np.ndarray]] = {}
    for arm in ("control", "treatment"):
        mine = [u for u in users if arm_of[u] == arm]
        out[arm] = {n: np.array([values[u][n] for u in mine]) for n in names}
    return out


@pytest.fixture(scope="module")
def carts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    folder = tmp_path_factory.mktemp("team")
    rows = team_log()
    events = _write(folder / "events.csv", rows)
    (folder / "metrics.toml").write_text(METRICS_TOML)
    db = folder / "s.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, events)
        add_metrics(store, folder / "metrics.toml")
    return db, rows


def _report(db: Path, **options: object) -> ExperimentReport:
    defaults: dict[str, object] = {"cuped_days": 0, "offline": False}
    with open_store(str(db), read_only=True) as store:
        return build_report(store, EXP, ReportOptions(**(defaults | options)))  # type: ignore[arg-type]


def _result(report: ExperimentReport, name: str) -> OnlineMetricResult:
    return next(m for m in report.metrics if m.metric == name and m.arm == "treatment")


def _welch_se(c: np.ndarray, t: np.ndarray) -> float:
    return math.sqrt(c.var(ddof=1) / c.size + t.var(ddof=1) / t.size)


def test_means_and_proportion_equal_numpy(carts: tuple[Path, list[dict[str, str]]]) -> None:
    db, rows = carts
    per = _per_user(rows)
    report = _report(db, primary=("cart_rate", "carts"), guardrails=("mobile_plays",))
    c, t = per["control"], per["treatment"]
    assert (c["carts"].size, t["carts"].size) == (30, 30)  # the ghost is not analysed

    for name, variable in (("carts", "carts"), ("cart_value", "value")):
        r = _result(report, name)
        assert r.control.value == pytest.approx(c[variable].mean(), rel=1e-12)
        assert r.treatment.value == pytest.approx(t[variable].mean(), rel=1e-12)
        assert r.comparison.absolute.effect == pytest.approx(
            t[variable].mean() - c[variable].mean(), rel=1e-12
        )
        assert r.comparison.absolute.se == pytest.approx(
            _welch_se(c[variable], t[variable]), rel=1e-9
        )

    rate = _result(report, "cart_rate")
    pc, pt = (c["carts"] > 0).mean(), (t["carts"] > 0).mean()
    assert (rate.control.value, rate.treatment.value) == pytest.approx((pc, pt), rel=1e-12)
    se = math.sqrt(pc * (1 - pc) / 30 + pt * (1 - pt) / 30)
    assert rate.comparison.absolute.se == pytest.approx(se, rel=1e-9)
    assert rate.role == "primary"

    plays = _result(report, "mobile_plays")  # only the plays on mobile count
    assert plays.role == "guardrail"
    assert plays.control.value == pytest.approx(c["mobile_plays"].mean(), rel=1e-12)
    assert plays.treatment.value == pytest.approx(t["mobile_plays"].mean(), rel=1e-12)
    assert plays.lower_is_better and report.catalog.lower_is_better("mobile_plays")
    assert not rate.lower_is_better


def test_ratio_and_its_delta_method_se(carts: tuple[Path, list[dict[str, str]]]) -> None:
    db, rows = carts
    per = _per_user(rows)
    r = _result(_report(db, primary=("value_per_cart",)), "value_per_cart")

    def ratio_var(m: np.ndarray, d: np.ndarray) -> tuple[float, float]:
        """Σm/Σd and the variance of that mean: the sample variance of the
        linearised values (m − R·d)/d̄, over n."""
        ratio = m.sum() / d.sum()
        linear = (m - ratio * d) / d.mean()
        return ratio, float(linear.var(ddof=1) / m.size)

    rc, vc = ratio_var(per["control"]["value"], per["control"]["carts"])
    rt, vt = ratio_var(per["treatment"]["value"], per["treatment"]["carts"])
    assert (r.control.value, r.treatment.value) == pytest.approx((rc, rt), rel=1e-12)
    assert r.comparison.absolute.effect == pytest.approx(rt - rc, rel=1e-12)
    assert r.comparison.absolute.se == pytest.approx(math.sqrt(vc + vt), rel=1e-9)


def test_cap_from_the_definition(carts: tuple[Path, list[dict[str, str]]]) -> None:
    """``cap = 0.9``: each user's value capped at the pooled 0.9 quantile (linear
    interpolation) before the means; the uncapped metric is left as it is."""
    db, rows = carts
    per = _per_user(rows)
    report = _report(db)
    pooled = np.concatenate([per["control"]["value"], per["treatment"]["value"]])
    cap = np.quantile(pooled, 0.9)
    r = _result(report, "capped_value")
    assert r.control.value == pytest.approx(np.minimum(per["control"]["value"], cap).mean())
    assert r.treatment.value == pytest.approx(np.minimum(per["treatment"]["value"], cap).mean())
    assert _result(report, "cart_value").control.value == pytest.approx(
        per["control"]["value"].mean()
    )
    (info,) = report.caps
    assert (info.variable, info.metrics, info.cap) == (
        "Σ value of add_to_cart",
        ("capped_value",),
        pytest.approx(cap),
    )
    above = {a: int((per[a]["value"] > cap).sum()) for a in ("control", "treatment")}
    assert info.users_capped == above


def test_cuped_segments_daily_and_sequential(carts: tuple[Path, list[dict[str, str]]]) -> None:
    """The recorded metric goes through CUPED (its pre-period add_to_cart events),
    the segments and the daily series like a built-in."""
    db, _ = carts
    report = _report(db, cuped_days=14, primary=("carts",), segment="device", sequential=True)
    r = _result(report, "carts")
    assert r.comparison.cuped  # the pre-period varies: CUPED applied
    assert r.unadjusted is not None and not r.unadjusted.cuped
    assert r.comparison.absolute.dof is None  # the sequential method
    assert {(s.value, s.metric) for s in report.segments} == {
        ("desktop", "carts"),
        ("mobile", "carts"),
    }
    assert {p.metric for p in report.daily} == {"carts"}


def test_secondary_by_default_and_builtins_unchanged(
    carts: tuple[Path, list[dict[str, str]]],
) -> None:
    db, _ = carts
    report = _report(db)
    names = {m.metric for m in report.metrics}
    assert {"cart_rate", "carts", "value_per_cart", "ctr", "conversion"} <= names
    assert _result(report, "carts").role == "secondary"
    assert _result(report, "impressions_per_user").treatment.value == 0.0


def test_cap_option_on_a_recorded_metric(carts: tuple[Path, list[dict[str, str]]]) -> None:
    """``--cap carts=0.8`` caps a recorded mean like a built-in; a proportion cannot
    be capped (a usage error naming the option)."""
    db, rows = carts
    per = _per_user(rows)
    report = _report(db, caps=(("carts", 0.8),))
    pooled = np.concatenate([per["control"]["carts"], per["treatment"]["carts"]])
    cap = np.quantile(pooled, 0.8)
    r = _result(report, "carts")
    assert r.treatment.value == pytest.approx(np.minimum(per["treatment"]["carts"], cap).mean())
    assert "carts" in {m for c in report.caps for m in c.metrics}
    with pytest.raises(OptionError) as caught:
        _report(db, caps=(("cart_rate", 0.8),))
    assert caught.value.parameter == "cap"
    assert caught.value.reason == (
        "cannot cap 'cart_rate': a proportion is 0 or 1 per user; metrics that can be capped: "
        "ctr, revenue_per_user, clicks_per_user, purchases_per_user, impressions_per_user, aov, "
        "capped_value, cart_value, carts, mobile_plays, value_per_cart"
    )
    with pytest.raises(OptionError) as caught:  # a built-in proportion: the same list
        _report(db, caps=(("conversion", 0.8),))
    assert caught.value.reason.endswith(
        "aov, capped_value, cart_value, carts, mobile_plays, value_per_cart"
    )
