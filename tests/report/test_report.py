"""The online report on a small experiment whose numbers are checked by hand.

Users (all exposed at 10:00 on 2024-03-01, events after exposure unless noted):

    arm        user  impressions  clicks  purchases (revenue)  pre-period clicks
    control    c1    2            1       0                    1
    control    c2    4            0       1 (10.0)             0
    control    c3    2            2       0                    2
    treatment  t1    2            1       1 (20.0)             0
    treatment  t2    2            2       0                    1
    treatment  t3    4            1       1 (30.0)             1

CTR control = 3/8, treatment = 4/8; conversion 1/3 vs 2/3; revenue per user
10/3 vs 50/3. Expected statistics below are computed from these per-user values
with numpy and scipy, independently of the store's SQL.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from abeval.analysis.online import ReportOptions, build_report
from abeval.cli import app
from abeval.store import open_store
from abeval.store.ingest import ingest_file
from abeval.store.sql.online_moments import arm_moments

EXP = "hand"
HEADER = [
    "experiment",
    "arm",
    "user_id",
    "ts",
    "event_type",
    "request_id",
    "item_id",
    "position",
    "value",
    "device",
]
USERS = {
    # user: (arm, impressions, clicks, purchases revenue list, pre clicks, device)
    "c1": ("control", 2, 1, [], 1, "mobile"),
    "c2": ("control", 4, 0, [10.0], 0, "desktop"),
    "c3": ("control", 2, 2, [], 2, "mobile"),
    "t1": ("treatment", 2, 1, [20.0], 0, "mobile"),
    "t2": ("treatment", 2, 2, [], 1, "desktop"),
    "t3": ("treatment", 4, 1, [30.0], 1, "mobile"),
}


def hand_rows(experiment: str = EXP) -> list[list[str]]:
    rows: list[list[str]] = []
    for user, (arm, imps, clicks, revenue, pre_clicks, device) in USERS.items():
        rows.append(
            [experiment, arm, user, "2024-03-01T10:00:00", "exposure", "", "", "", "", device]
        )
        # pre-period: a request of two items a day before exposure, with its clicks
        for pos in (1, 2):
            rows.append(
                [
                    experiment,
                    arm,
                    user,
                    "2024-02-29T10:00:00",
                    "impression",
                    f"{user}-pre",
                    f"i{pos}",
                    str(pos),
                    "",
                    device,
                ]
            )
        for pos in range(1, pre_clicks + 1):
            rows.append(
                [
                    experiment,
                    arm,
                    user,
                    "2024-02-29T10:00:05",
                    "click",
                    f"{user}-pre",
                    f"i{pos}",
                    "",
                    "",
                    device,
                ]
            )
        for pos in range(1, imps + 1):
            req = f"{user}-r{(pos - 1) // 2}"
            rows.append(
                [
                    experiment,
                    arm,
                    user,
                    "2024-03-01T11:00:00",
                    "impression",
                    req,
                    f"i{pos}",
                    str((pos - 1) % 2 + 1),
                    "",
                    device,
                ]
            )
        for c in range(clicks):
            req = f"{user}-r{c // 2}"
            rows.append(
                [
                    experiment,
                    arm,
                    user,
                    "2024-03-01T11:00:05",
                    "click",
                    req,
                    f"i{c + 1}",
                    "",
                    "",
                    device,
                ]
            )
        for j, value in enumerate(revenue):
            rows.append(
                [
                    experiment,
                    arm,
                    user,
                    "2024-03-01T11:01:00",
                    "purchase",
                    f"{user}-r0",
                    f"i{j + 1}",
                    "",
                    str(value),
                    device,
                ]
            )
    return rows


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


@pytest.fixture
def hand_store(tmp_path: Path) -> str:
    db = str(tmp_path / "hand.duckdb")
    store = open_store(db)
    ingest_file(store, write_csv(tmp_path / "hand.csv", hand_rows()))
    store.close()
    return db


def per_user(arm: str) -> dict[str, np.ndarray]:
    vals = [v for v in USERS.values() if v[0] == arm]
    return {
        "impressions": np.array([v[1] for v in vals], float),
        "clicks": np.array([v[2] for v in vals], float),
        "purchases": np.array([len(v[3]) for v in vals], float),
        "revenue": np.array([sum(v[3]) for v in vals], float),
        "pre_clicks": np.array([v[4] for v in vals], float),
    }


def test_sufficient_statistics_match_per_user_values(hand_store: str) -> None:
    store = open_store(hand_store, read_only=True)
    with store.connect() as conn:
        moments = arm_moments(conn, EXP, cuped_days=14)
    store.close()
    for arm in ("control", "treatment"):
        u = per_user(arm)
        m = moments[arm]
        assert m.n == 3
        for name in ("impressions", "clicks", "purchases", "revenue", "pre_clicks"):
            assert m.sums[name] == pytest.approx(u[name].sum())
            assert m.ss(name) == pytest.approx(((u[name] - u[name].mean()) ** 2).sum())
        cross = (u["clicks"] - u["clicks"].mean()) * (u["impressions"] - u["impressions"].mean())
        assert m.cp("clicks", "impressions") == pytest.approx(cross.sum())
        assert m.sums["pre_impressions"] == 6  # two pre-period impressions per user


def delta_ratio(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """Ratio and variance of the ratio by the delta method, from per-user values."""
    n = len(num)
    mx, my = num.mean(), den.mean()
    vx, vy = num.var(ddof=1), den.var(ddof=1)
    cxy = np.cov(num, den, ddof=1)[0, 1]
    var = (vx / my**2 - 2 * cxy * mx / my**3 + mx**2 * vy / my**4) / n
    return mx / my, var


def test_ctr_is_a_delta_method_ratio(hand_store: str) -> None:
    store = open_store(hand_store, read_only=True)
    # a reached plan (one user): the report shows the fixed-horizon (Welch) tests
    options = ReportOptions(cuped_days=0, offline=False, plan_users=1)
    report = build_report(store, EXP, options)
    store.close()
    ctr = next(m for m in report.metrics if m.metric == "ctr")
    assert ctr.basis == "fixed_horizon" and ctr.reference_fixed_horizon is None
    c, t = per_user("control"), per_user("treatment")
    rc, vc = delta_ratio(c["clicks"], c["impressions"])
    rt, vt = delta_ratio(t["clicks"], t["impressions"])
    assert ctr.control.value == pytest.approx(3 / 8)
    assert ctr.treatment.value == pytest.approx(4 / 8)
    assert (ctr.control.numerator, ctr.control.denominator) == (3, 8)
    assert ctr.comparison.absolute.effect == pytest.approx(rt - rc)
    assert ctr.comparison.absolute.se == pytest.approx(math.sqrt(vc + vt))
    dof = (vc + vt) ** 2 / (vc**2 / 2 + vt**2 / 2)
    p = 2 * sps.t.sf(abs(rt - rc) / math.sqrt(vc + vt), dof)
    assert ctr.comparison.absolute.p_value == pytest.approx(p)
    conv = next(m for m in report.metrics if m.metric == "conversion")
    assert conv.control.value == pytest.approx(1 / 3)
    assert conv.treatment.value == pytest.approx(2 / 3)
    rev = next(m for m in report.metrics if m.metric == "revenue_per_user")
    welch = sps.ttest_ind(per_user("treatment")["revenue"], c["revenue"], equal_var=False)
    assert rev.comparison.absolute.p_value == pytest.approx(welch.pvalue)


def test_primary_family_is_holm_corrected(hand_store: str) -> None:
    store = open_store(hand_store, read_only=True)
    report = build_report(store, EXP, ReportOptions(cuped_days=0, offline=False))
    store.close()
    prim = [m for m in report.metrics if m.role == "primary"]
    assert [m.metric for m in prim] == ["ctr", "conversion"]
    # the fixed-horizon comparisons (no plan: the decision's are group-sequential)
    fixed = [m.reference_fixed_horizon or m.comparison for m in prim]
    raw = sorted(c.relative.p_value or 0 for c in fixed)
    expected = [min(1.0, 2 * raw[0]), min(1.0, max(2 * raw[0], raw[1]))]
    got = sorted(c.relative.p_adjusted or 0 for c in fixed)
    assert got == pytest.approx(expected)


def test_health_counts(hand_store: str) -> None:
    store = open_store(hand_store, read_only=True)
    report = build_report(store, EXP, ReportOptions(offline=False))
    store.close()
    h = report.health
    assert (h.users_seen, h.users_analysed, h.users_in_several_arms) == (6, 6, 0)
    # two pre-period impressions plus the pre-period clicks, per user
    assert h.events_before_exposure == 6 * 2 + sum(v[4] for v in USERS.values())
    # purchases were attributed to items i1/i2 of request r0, which were clicked except for c2
    assert h.purchases_without_click == 1
    assert h.srm.p_value == pytest.approx(1.0)


def test_contaminated_users_are_left_out(tmp_path: Path) -> None:
    rows = hand_rows()
    rows.append(
        [EXP, "treatment", "c1", "2024-03-01T12:00:00", "impression", "x", "i9", "1", "", "mobile"]
    )
    db = str(tmp_path / "c.duckdb")
    store = open_store(db)
    ingest_file(store, write_csv(tmp_path / "c.csv", rows))
    report = build_report(store, EXP, ReportOptions(offline=False))
    store.close()
    assert report.health.users_in_several_arms == 1
    assert {a.arm: a.users for a in report.arms} == {"control": 2, "treatment": 3}


def test_text_report_shows_hand_checked_values(hand_store: str) -> None:
    result = CliRunner().invoke(
        app,
        [
            "report",
            "-e",
            EXP,
            "--db",
            hand_store,
            "--format",
            "text",
            "--cuped-days",
            "0",
            "--no-offline",
        ],
    )
    assert result.exit_code == 0, result.output
    ctr_line = next(
        line for line in result.stdout.splitlines() if line.lstrip("* ").startswith("CTR ")
    )
    assert "0.3750" in ctr_line and "0.5000" in ctr_line and "+33.33%" in ctr_line
    assert "arms: control 3 users, treatment 3 users" in result.stdout


def test_json_report_is_valid_and_matches_model(hand_store: str) -> None:
    result = CliRunner().invoke(
        app, ["report", "-e", EXP, "--db", hand_store, "--format", "json", "--no-offline"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == "2.2"
    assert doc["settings"]["control"] == "control"
    ctr = next(m for m in doc["metrics"] if m["metric"] == "ctr")
    assert ctr["control"]["numerator"] == 3 and ctr["control"]["denominator"] == 8
    text = json.dumps(doc)
    assert "NaN" not in text and "Infinity" not in text


def test_report_json_validates_against_schema(hand_store: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "reports" / "report.schema.json").read_text())
    store = open_store(hand_store, read_only=True)
    doc = build_report(store, EXP, ReportOptions(segment="device", offline=False)).to_dict()
    store.close()
    jsonschema.validate(doc, schema)


def test_segment_breakdown(hand_store: str) -> None:
    store = open_store(hand_store, read_only=True)
    report = build_report(store, EXP, ReportOptions(segment="device", offline=False))
    store.close()
    values = {(s.value, s.metric) for s in report.segments}
    assert values == {
        ("desktop", "ctr"),
        ("desktop", "conversion"),
        ("mobile", "ctr"),
        ("mobile", "conversion"),
    }
    mobile_ctr = next(s for s in report.segments if s.value == "mobile" and s.metric == "ctr")
    assert (mobile_ctr.control_users, mobile_ctr.treatment_users) == (2, 2)
    # mobile: control c1, c3 = 3 clicks / 4 impressions; treatment t1, t3 = 2 / 6
    assert mobile_ctr.comparison.control_mean == pytest.approx(3 / 4)
    assert mobile_ctr.comparison.treatment_mean == pytest.approx(2 / 6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-e", "nope"],
            "Error: no experiment 'nope' in the store; known: hand "
            "(list them with `abeval experiments`)",
        ),
        (
            ["-e", "hnad"],
            "Error: no experiment 'hnad' in the store; did you mean hand? "
            "(list them with `abeval experiments`)",
        ),
    ],
)
def test_report_errors(hand_store: str, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["report", "--db", hand_store, "--format", "json", *args])
    assert result.exit_code == 1
    assert result.stderr.strip() == message
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-e", EXP, "--control", "ctrl"],
            "Error: --control 'ctrl': experiment 'hand' has no arm 'ctrl'; did you mean control? "
            "its arms are control, treatment",
        ),
        (
            ["-e", EXP, "--primary", "ctr,convrsion"],
            "Error: --primary 'ctr,convrsion': unknown metric 'convrsion'; did you mean "
            "conversion? known: ctr, conversion, revenue_per_user, clicks_per_user, "
            "purchases_per_user, impressions_per_user, aov",
        ),
        (
            ["-e", EXP, "--segment", "devce"],
            "Error: --segment 'devce': experiment 'hand' has no attribute 'devce'; did you mean "
            "device? known attributes: device",
        ),
        (
            ["-e", EXP, "--segment", "country"],
            "Error: --segment 'country': experiment 'hand' has no attribute 'country'; "
            "known attributes: device",
        ),
        (
            ["-e", EXP, "--guardrails", "ctr,foo"],
            "Error: --guardrails 'ctr,foo': unknown metric 'foo'; known: ctr, conversion, "
            "revenue_per_user, clicks_per_user, purchases_per_user, impressions_per_user, aov",
        ),
    ],
)
def test_report_option_errors_are_usage_errors(
    hand_store: str, args: list[str], message: str
) -> None:
    """A bad option value exits 2, as Typer's own usage errors do, in one line."""
    result = CliRunner().invoke(app, ["report", "--db", hand_store, "--format", "json", *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == message
    assert result.stdout == ""


def test_one_arm_experiment_is_a_clear_error(tmp_path: Path) -> None:
    rows = [r for r in hand_rows() if r[1] == "control"]
    db = str(tmp_path / "one.duckdb")
    store = open_store(db)
    ingest_file(store, write_csv(tmp_path / "one.csv", rows))
    store.close()
    result = CliRunner().invoke(app, ["report", "-e", EXP, "--db", db, "--format", "json"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: experiment 'hand' has one arm (control): nothing to compare; "
        "check the arm column of the events"
    )


def test_segment_without_attributes_says_where_they_come_from(tmp_path: Path) -> None:
    rows = [r[:-1] for r in hand_rows()]
    path = tmp_path / "plain.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER[:-1])
        writer.writerows(rows)
    db = str(tmp_path / "plain.duckdb")
    with open_store(db) as store:
        ingest_file(store, path)
    result = CliRunner().invoke(
        app, ["report", "-e", EXP, "--db", db, "--format", "json", "--segment", "device"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: --segment 'device': experiment 'hand' has no event attributes to segment by; "
        "extra columns of the event files become attributes"
    )


def test_report_on_missing_store_says_how_to_fill_it(tmp_path: Path) -> None:
    db = tmp_path / "none.duckdb"
    result = CliRunner().invoke(app, ["report", "-e", EXP, "--db", str(db), "--format", "json"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: no store at {db}; load events first")
    assert not db.exists()
