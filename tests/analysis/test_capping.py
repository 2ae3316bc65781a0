"""Outlier capping (docs/metrics.md#outlier-capping) against numpy's quantile and clip
on the per-user values, on DuckDB and on PostgreSQL, and through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cap_formats import check_cap_formats
from ingest_store import store_of
from typer.testing import CliRunner

from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.report_model import ExperimentReport
from abeval.cli import app
from abeval.store import open_store
from abeval.store.ingest import ingest_file

runner = CliRunner()

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"
USERS = 80  # per arm


def _revenue() -> dict[str, list[list[float]]]:
    """Per arm, per user: the values of their purchases (heavy-tailed, most users none)."""
    rng = np.random.default_rng(11)
    out: dict[str, list[list[float]]] = {}
    for arm, scale in (("control", 1.0), ("treatment", 1.3)):
        users = []
        for _ in range(USERS):
            k = int(rng.choice([0, 0, 0, 1, 1, 2]))
            users.append([round(float(v), 2) for v in rng.lognormal(3.0 * scale, 1.2, size=k)])
        out[arm] = users
    return out


REVENUE = _revenue()


def _csv(path: Path) -> Path:
    rows = [HEADER]
    for arm, users in REVENUE.items():
        for i, purchases in enumerate(users):
            u = f"{arm[0]}{i}"
            rows.append(f"cap,{arm},{u},2024-05-01T08:00:00,exposure,,,,")
            rows.append(f"cap,{arm},{u},2024-05-01T08:01:00,impression,{u}-r,i1,1,")
            rows += [
                f"cap,{arm},{u},2024-05-01T08:0{2 + j}:00,purchase,{u}-r,i1,,{v}"
                for j, v in enumerate(purchases)
            ]
    path.write_text("\n".join(rows) + "\n")
    return path


def per_user(arm: str) -> np.ndarray:
    return np.array([sum(p) for p in REVENUE[arm]], float)


def purchases(arm: str) -> np.ndarray:
    return np.array([len(p) for p in REVENUE[arm]], float)


def check_capped(report: ExperimentReport, quantile: float) -> None:
    """The report's capped revenue against numpy on the per-user values."""
    pooled = np.concatenate([per_user("control"), per_user("treatment")])
    cap = float(np.quantile(pooled, quantile))  # linear interpolation, as percentile_cont
    assert cap < pooled.max()  # the cap binds
    (info,) = report.caps
    assert (info.variable, info.quantile) == ("revenue", quantile)
    assert info.metrics == ("revenue_per_user", "aov")
    assert info.cap == pytest.approx(cap, rel=1e-12)
    above = {arm: int((per_user(arm) > cap).sum()) for arm in ("control", "treatment")}
    assert info.users_capped == above and info.users_capped_total == sum(above.values())
    # the share of a lift the cap keeps: Σ of the values at or below the cap over Σ capped
    below = pooled[pooled <= cap].sum()
    assert info.lift_kept == pytest.approx(below / np.minimum(pooled, cap).sum(), rel=1e-9)
    stats = report.methodology.sufficient_statistics
    for arm in ("control", "treatment"):
        x = np.clip(per_user(arm), None, cap)
        rpu = next(m for m in report.metrics if m.metric == "revenue_per_user")
        value = rpu.control if arm == "control" else rpu.treatment
        assert value.value == pytest.approx(x.mean(), rel=1e-12)
        assert stats[arm]["sum"]["revenue"] == pytest.approx(x.sum(), rel=1e-12)
        ss = stats[arm]["centred_cross_products"]["revenue*revenue"]
        assert ss == pytest.approx(((x - x.mean()) ** 2).sum(), rel=1e-9)
        aov = next(m for m in report.metrics if m.metric == "aov")
        a = aov.control if arm == "control" else aov.treatment
        assert a.value == pytest.approx(x.sum() / purchases(arm).sum(), rel=1e-12)
    # Uncapped metrics do not move: purchases per user.
    ppu = next(m for m in report.metrics if m.metric == "purchases_per_user")
    assert ppu.control.value == pytest.approx(purchases("control").mean(), rel=1e-12)


def _report(db: str, quantile: float) -> ExperimentReport:
    options = ReportOptions(caps=(("revenue_per_user", quantile),), offline=False)
    with open_store(db, read_only=True) as store:
        return build_report(store, "cap", options)


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> str:
    return store_of(_csv(tmp_path_factory.mktemp("cap") / "cap.csv"))


@pytest.mark.parametrize("quantile", [0.9, 0.99])
def test_capping_matches_numpy_on_duckdb(duck: str, quantile: float) -> None:
    check_capped(_report(duck, quantile), quantile)


@pytest.mark.postgres
def test_capping_matches_numpy_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    with open_store(postgres_database) as store:
        ingest_file(store, _csv(tmp_path / "cap.csv"))
        report = build_report(store, "cap", ReportOptions(caps=(("aov", 0.95),), offline=False))
    check_capped(report, 0.95)


def test_without_a_cap_nothing_is_capped(duck: str) -> None:
    with open_store(duck, read_only=True) as store:
        report = build_report(store, "cap", ReportOptions(offline=False))
    assert report.caps == () and report.settings.caps == {}
    rpu = next(m for m in report.metrics if m.metric == "revenue_per_user")
    assert rpu.control.value == pytest.approx(per_user("control").mean(), rel=1e-12)


def test_cli_states_the_cap_in_every_format(duck: str, tmp_path: Path) -> None:
    args = ["report", "-e", "cap", "--db", duck, "--no-offline", "--cap", "revenue_per_user=0.9"]
    cap = float(np.quantile(np.concatenate([per_user("control"), per_user("treatment")]), 0.9))
    assert 1 <= cap < 100  # shown with three decimals, as every value of that size
    page = tmp_path / "cap.html"
    doc = check_cap_formats(args, page, "revenue", "revenue_per_user, aov", 0.9, cap)
    jsonschema = pytest.importorskip("jsonschema")
    schema = Path(__file__).parents[2] / "reports" / "report.schema.json"
    jsonschema.validate(doc, json.loads(schema.read_text()))
    assert doc["settings"]["caps"] == {"revenue_per_user": 0.9}
    assert "revenue_per_user at the 0.9 quantile" in page.read_text()


@pytest.mark.parametrize(
    ("caps", "message"),
    [
        (
            ["conversion=0.9"],
            "cannot cap 'conversion': a proportion is 0 or 1 per user; metrics that can be "
            "capped: ctr, revenue_per_user, clicks_per_user",
        ),
        (["revenue_per_user=1.5"], "the quantile of revenue_per_user must be between 0 and 1"),
        (["revenue_per_user"], "cannot read 'revenue_per_user'; write METRIC=QUANTILE"),
        (["=0.5"], "cannot read '=0.5'; write METRIC=QUANTILE"),
        (
            ["clicks_per_user=0.9,clicks_per_user=0.8"],
            "clicks_per_user is capped twice, at 0.9 and 0.8; give one quantile",
        ),
        (
            ["revenue_per_user=0.9,aov=0.95"],
            "revenue_per_user and aov both cap revenue; give them the same quantile",
        ),
    ],
)
def test_bad_caps_are_usage_errors(duck: str, caps: list[str], message: str) -> None:
    args = [a for c in caps for a in ("--cap", c)]
    result = runner.invoke(app, ["report", "-e", "cap", "--db", duck, *args])
    assert result.exit_code == 2
    line = " ".join(result.stderr.split())
    assert line.startswith(f"Error: --cap {caps[-1]!r}: {message}"), line
    assert result.stdout == ""


def test_caps_repeat_and_combine(duck: str) -> None:
    args = ["--cap", "revenue_per_user=0.9", "--cap", " aov=0.9,"]
    result = runner.invoke(
        app, ["report", "-e", "cap", "--db", duck, "--no-offline", "-f", "json", *args]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["settings"]["caps"] == {"revenue_per_user": 0.9, "aov": 0.9}
    assert [c["variable"] for c in doc["caps"]] == ["revenue"]


@pytest.mark.parametrize("quantile", [0.9, 0.99])
def test_lift_kept_is_the_capped_lift_of_a_small_scaling(quantile: float) -> None:
    """κ (abeval.analysis.capping.lift_kept) is the capped relative lift per unit of
    a small lift that scales every user's value: the treatment the control's users
    with every value times 1 + ε, the cap recomputed on both arms pooled (numpy),
    the capped lift divided by ε."""
    from abeval.analysis.capping import lift_kept
    from abeval.store.sql.online_caps import CapValue

    rng = np.random.default_rng(3)
    x = np.where(rng.random(200_000) < 0.2, rng.lognormal(3.0, 1.2, 200_000), 0.0)
    cap = float(np.quantile(np.concatenate([x, x]), quantile))
    value = CapValue(
        "revenue",
        quantile,
        cap,
        {"control": int((x > cap).sum()), "treatment": int((x > cap).sum())},
        {"control": float(np.minimum(x, cap).sum()), "treatment": float(np.minimum(x, cap).sum())},
    )
    eps = 1e-4
    t = x * (1 + eps)
    moved = float(np.quantile(np.concatenate([x, t]), quantile))
    capped_lift = np.minimum(t, moved).mean() / np.minimum(x, moved).mean() - 1
    kept = lift_kept(value)
    assert kept is not None and 0 < kept < 1
    assert capped_lift / eps == pytest.approx(kept, rel=2e-3)
