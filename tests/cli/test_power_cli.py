"""``abeval power``: planned from an experiment's own data (agreeing with the
report's detectable effect), the --mde guard, infeasible durations, and the
closed-form plan against statsmodels; ``report --relative-interval``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.ingest import ingest_file

EXP = "home-reco-v2"


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("power")
    events = tmp / "events.csv"
    write_events(SimulationConfig(users=2000, seed=5, days=4, pre_period_days=4), events)
    db = str(tmp / "store.duckdb")
    with open_store(db) as store:
        ingest_file(store, events)
    return db


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_power_from_the_data_agrees_with_the_report(sim_db: str) -> None:
    code, out, _ = run("report", "-e", EXP, "--db", sim_db, "--format", "json", "--no-offline")
    assert code == 0
    report = {(p["metric"], p["arm"]): p for p in json.loads(out)["power"]}
    code, out, _ = run("power", "--experiment", EXP, "--db", sim_db, "--json")
    assert code == 0
    plan = json.loads(out)
    assert {(p["metric"], p["arm"]) for p in plan} == set(report)  # the primary metrics
    for p in plan:
        expected = report[(p["metric"], p["arm"])]
        for part in ("detectable", "needed_for_target"):
            assert same(p[part], expected[part])  # the engine's sums differ in the last bits


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    """Equal, numbers to 1e-9 relative."""
    assert a.keys() == b.keys()
    for key, x in a.items():
        y = b[key]
        if isinstance(x, float) and isinstance(y, float):
            assert x == pytest.approx(y, rel=1e-9), key
        elif key != "total_users" and key != "users_by_arm":
            assert x == y, key
    return True


def test_power_from_the_data_plans_with_cuped_and_delta_method(sim_db: str) -> None:
    code, out, _ = run("report", "-e", EXP, "--db", sim_db, "--format", "json", "--no-offline")
    metrics = {(m["metric"], m["arm"]): m for m in json.loads(out)["metrics"]}
    code, out, _ = run(
        "power", "-e", EXP, "--db", sim_db, "--metric", "revenue_per_user,ctr", "--json"
    )
    assert code == 0
    for p in json.loads(out):
        comparison = metrics[(p["metric"], p["arm"])]["comparison"]
        detectable = p["detectable"]
        # the MDE in units of the per-user sd (Cohen's d) from statsmodels' normal power,
        # at the α the decision uses: 0.05 over the 2 primary comparisons (Holm's smallest step)
        n_c, n_t = detectable["users_by_arm"]
        d = NormalIndPower().solve_power(
            effect_size=None, nobs1=n_c, alpha=0.05 / 2, power=0.8, ratio=n_t / n_c
        )
        sd = math.sqrt(detectable["baseline_variance"])
        # to the solver tolerance of statsmodels
        assert detectable["mde_absolute"] == pytest.approx(float(d) * sd, rel=1e-5)
        # planned from the main comparison's statistics: CUPED's when it applied
        assert detectable["baseline_mean"] == pytest.approx(comparison["control_mean"], rel=1e-12)
        assert p["needed_for_target"]["baseline_variance"] == pytest.approx(
            detectable["baseline_variance"], rel=1e-12
        )


def test_power_text_from_the_data(sim_db: str) -> None:
    code, out, _ = run("power", "-e", EXP, "--db", sim_db, "--metric", "ctr", "--mde", "0.05")
    assert code == 0
    assert out.startswith(f"{EXP}: a fixed-horizon test at alpha 0.05 and 80% power\n")
    assert "CTR (treatment): baseline " in out
    assert "a +5.00% lift needs " in out


def test_infeasible_duration_says_so(sim_db: str) -> None:
    code, out, _ = run("power", "-e", EXP, "--db", sim_db, "--metric", "ctr", "--mde", "0.0001")
    assert code == 0
    assert "not feasible at this traffic (" in out and " more days at " in out


def test_infeasible_by_hand() -> None:
    code, out, _ = run("power", "--baseline", "0.05", "--mde", "0.001", "--users-per-day", "100")
    assert code == 0
    assert "not feasible at this traffic (" in out


@pytest.mark.parametrize("mde", ["2", "1", "50"])
def test_mde_given_as_a_percentage_is_a_usage_error(mde: str) -> None:
    code, _, err = run("power", "--baseline", "0.05", "--mde", mde)
    assert code == 2
    value = float(mde)
    assert f"did you mean {value / 100:g} ({value:g}%)?" in err


def test_experiment_and_baseline_are_exclusive(sim_db: str) -> None:
    code, _, err = run("power", "-e", EXP, "--db", sim_db, "--baseline", "0.1")
    assert code == 2
    assert "plans from the data with --experiment: leave it out" in err
    code, _, err = run("power", "--mde", "0.02")
    assert code == 2 and "give the control value, or --experiment" in err


def test_users_needed_against_statsmodels() -> None:
    """The by-hand plan for a mean: Cohen's d = Δ/σ, n per arm from statsmodels'
    normal power (the t version agrees to within a user at this size)."""
    code, out, _ = run("power", "--baseline", "10", "--sd", "4", "--mde", "0.05", "--json")
    assert code == 0
    result = json.loads(out)
    d = 10 * 0.05 / 4
    n_normal = NormalIndPower().solve_power(effect_size=d, alpha=0.05, power=0.8, ratio=1)
    n_t = TTestIndPower().solve_power(effect_size=d, alpha=0.05, power=0.8, ratio=1)
    assert result["users_by_arm"][0] == math.ceil(n_normal)
    assert abs(result["users_by_arm"][0] - n_t) < 2


def test_report_relative_interval_option(sim_db: str) -> None:
    runs = {}
    for how in ("fieller", "delta"):
        code, out, _ = run(
            "report", "-e", EXP, "--db", sim_db, "-f", "json", "--no-offline",
            "--relative-interval", how, "--plan-users", "1",  # reached: fixed horizon
        )  # fmt: skip
        assert code == 0
        runs[how] = json.loads(out)
        assert runs[how]["settings"]["relative_interval"] == how
    for f, d in zip(runs["fieller"]["metrics"], runs["delta"]["metrics"], strict=True):
        fc, dc = f["comparison"], d["comparison"]
        assert fc["relative_interval"] == "fieller" and dc["relative_interval"] == "delta"
        assert fc["relative"]["p_value"] == fc["absolute"]["p_value"]
        assert fc["relative"]["effect"] == pytest.approx(dc["relative"]["effect"], rel=1e-9)
        lift = fc["relative"]
        ci, p = lift["ci_adjusted"], lift["p_adjusted"]
        if ci is not None and p is not None:  # adjusted: excludes 0 exactly when p_adj < alpha
            assert (ci[0] > 0 or ci[1] < 0) == (p < 0.05)
    delta_p = [m["comparison"]["relative"]["p_value"] for m in runs["delta"]["metrics"]]
    absolute_p = [m["comparison"]["absolute"]["p_value"] for m in runs["delta"]["metrics"]]
    assert delta_p != absolute_p  # the delta method tests on its own scale
    code, _, err = run("report", "-e", EXP, "--db", sim_db, "--relative-interval", "wald")
    assert code == 2 and "fieller" in err and "delta" in err


def test_report_says_an_infeasible_target_is_not_feasible(sim_db: str, tmp_path: Path) -> None:
    args = ("report", "-e", EXP, "--db", sim_db, "--no-offline", "--target-mde", "0.0001")
    code, out, _ = run(*args, "-f", "json")
    assert code == 0
    power = json.loads(out)["power"]
    assert power and not any(p["feasible"] for p in power)
    assert all(p["more_days_needed"] > 365 for p in power)
    code, out, _ = run(*args, "-f", "text")
    assert code == 0 and out.count("not feasible at this traffic (") == len(power)
    page = tmp_path / "r.html"
    code, _, _ = run(*args, "-f", "html", "--out", str(page))
    assert code == 0
    assert page.read_text().count("not feasible at this traffic (") == len(power)
