"""The saved configuration through the CLI: ``experiment set`` records it,
``experiment show`` prints it (text and JSON), ``experiment unset`` removes one
option; bad input changes nothing. ``report`` and ``power`` read it, a flag
overrides it for one run, and ``settings.sources`` says where each came from."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

# The store of tests/cli/test_experiments_cli.py: experiment home, arms control and treatment.
from test_experiments_cli import invoke, store  # noqa: F401
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events

runner = CliRunner()

SET = [
    "experiment",
    "set",
    "home",
    "--primary",
    "conversion",
    "--guardrails",
    "revenue_per_user:2%,impressions_per_user",
    "--cap",
    "revenue_per_user=0.99",
    "--alpha",
    "0.1",
    "--plan-users",
    "20000",
    "--plan-days",
    "14",
]


def stored(db: Path) -> tuple[object, ...]:
    """The experiment's row as the store keeps it: control, split, config (parsed)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT control_arm, split, config FROM experiments WHERE experiment = 'home'"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    return (row[0], row[1], json.loads(row[2]) if row[2] else None)


def stamp(db: Path, started: datetime) -> dict[str, object]:
    """The plan's stamp as stored, checked against the fixture's events: the last
    event 2024-05-02 11:00, two days from the first exposure (05-01 08:00), u2 and
    u3 exposed to one arm each (u1 to both), and a time within the test's run."""
    recorded = stored(db)[2]
    assert isinstance(recorded, dict)
    found = recorded["plan_recorded"]
    at = datetime.fromisoformat(found.pop("recorded_at")).replace(tzinfo=UTC)
    assert started - timedelta(seconds=1) <= at <= datetime.now(UTC)
    assert found == {
        "data_until": "2024-05-02T11:00:00",
        "days": 2,
        "users": 2,
        "plan_users": recorded.get("plan_users"),
        "plan_days": recorded.get("plan_days"),
        "after_data": False,
    }
    return {**found, "recorded_at": at.replace(tzinfo=None).isoformat()}


def unstamped(db: Path) -> tuple[object, ...]:
    """:func:`stored` without the plan's stamp."""
    control, split, config = stored(db)
    if isinstance(config, dict):
        config = {k: v for k, v in config.items() if k != "plan_recorded"}
    return control, split, config


RECORDED = {
    "primary": ["conversion"],
    "guardrails": [
        {"metric": "revenue_per_user", "margin": 0.02},
        {"metric": "impressions_per_user", "margin": None},
    ],
    "caps": {"revenue_per_user": 0.99},
    "alpha": 0.1,
    "plan_users": 20000,
    "plan_days": 14,
}


def test_set_show_unset_round_trip(store: Path) -> None:  # noqa: F811
    started = datetime.now(UTC)
    result = invoke(*SET)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        "home: control control (the arm named control); split equal\n"
        "  recorded primary: conversion\n"
        "  recorded guardrails: revenue_per_user (may drop by at most 2%), impressions_per_user\n"
        "  recorded cap: revenue_per_user at quantile 0.99\n"
        "  recorded alpha: 0.1\n"
        "  recorded plan-users: 20000\n"
        "  recorded plan-days: 14\n"
    )
    assert unstamped(store) == (None, None, RECORDED)
    plan = stamp(store, started)
    at = datetime.fromisoformat(str(plan["recorded_at"])).strftime("%Y-%m-%d %H:%M UTC")

    shown = invoke("experiment", "show", "home")
    assert (shown.exit_code, shown.stderr) == (0, "")
    assert shown.stdout == (
        "home: control control (the arm named control); split equal\n"
        "  primary: conversion\n"
        "  guardrails: revenue_per_user (may drop by at most 2%), impressions_per_user\n"
        "  cap: revenue_per_user at quantile 0.99\n"
        "  alpha: 0.1\n"
        "  plan-users: 20000\n"
        "  plan-days: 14\n"
        f"  plan recorded {at}, on data to 2024-05-02 11:00 UTC: day 2, 2 users\n"
        "  not recorded (the defaults apply): --secondary, --cuped-days, --target-mde, "
        "--correction\n"
        "  status: not recorded\n"
        "  target probabilities: none recorded\n"
        "  evaluations: none recorded\n"
    )
    as_json = json.loads(invoke("experiment", "show", "home", "--format", "json").stdout)
    assert as_json == {
        "experiment": "home",
        "arms": ["control", "treatment"],
        "control": None,
        "split": None,
        "window_from": None,
        "window_to": None,
        "config": RECORDED | {"plan_recorded": plan},
        "owner": None,
        "hypothesis": None,
        "tags": [],
        "status": None,
        "decided_on": None,
        "target_propensities": None,
        "evaluations": [],
    }

    # A second set changes only what it names.
    assert (
        invoke("experiment", "set", "home", "--control", "treatment", "--alpha", "0.01").exit_code
        == 0
    )
    assert stored(store) == ("treatment", None, RECORDED | {"alpha": 0.01, "plan_recorded": plan})

    removed = invoke("experiment", "unset", "home", "--guardrails", "--control")
    assert removed.exit_code == 0
    assert removed.stderr.splitlines()[0] == "home: removed --control, --guardrails"
    rest = {k: v for k, v in RECORDED.items() if k != "guardrails"} | {"alpha": 0.01}
    assert stored(store) == (None, None, rest | {"plan_recorded": plan})
    # a part of the plan removed: the plan left is stamped anew
    assert invoke("experiment", "unset", "home", "--plan-days").exit_code == 0
    assert stamp(store, started)["plan_days"] is None
    everything = ["--primary", "--cap", "--alpha", "--plan-users"]
    assert invoke("experiment", "unset", "home", *everything).exit_code == 0
    assert stored(store) == (None, None, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--guardrails", "revenue_per_user:two"],
            "--guardrails 'revenue_per_user:two': cannot read the margin 'two' of "
            "revenue_per_user; write METRIC:MARGIN with a percentage or a fraction between 0 "
            "and 1, such as revenue_per_user:2% or revenue_per_user:0.02",
        ),
        (
            ["--guardrails", "aov:150%"],
            "--guardrails 'aov:150%': cannot read the margin '150%' of aov; write "
            "METRIC:MARGIN with a percentage or a fraction between 0 and 1, such as aov:2% "
            "or aov:0.02",
        ),
        (
            ["--plan-users", "0"],
            "--plan-users 0: a plan needs at least 1 user; give the planned users in all "
            "arms, or remove the plan with `abeval experiment unset EXPERIMENT --plan-users`",
        ),
        (
            ["--guardrails", "revenue_per_usr:2%"],
            "--guardrails 'revenue_per_usr': unknown metric 'revenue_per_usr'; did you mean "
            "revenue_per_user? known: ctr, conversion, revenue_per_user, clicks_per_user, "
            "purchases_per_user, impressions_per_user, aov",
        ),
        (
            ["--primary", "ctr,convrsion"],
            "--primary 'ctr,convrsion': unknown metric 'convrsion'; did you mean conversion? "
            "known: ctr, conversion, revenue_per_user, clicks_per_user, purchases_per_user, "
            "impressions_per_user, aov",
        ),
        (["--alpha", "1.5"], "--alpha 1.5: must be between 0 and 1 (exclusive)"),
    ],
)
def test_bad_config_records_nothing(store: Path, args: list[str], message: str) -> None:  # noqa: F811
    assert invoke("experiment", "set", "home", "--alpha", "0.1").exit_code == 0
    before = stored(store)
    result = invoke("experiment", "set", "home", "--plan-days", "7", *args)
    assert result.exit_code == 2  # a usage error (OptionError)
    assert (result.stdout, result.stderr) == ("", f"Error: {message}\n")
    assert stored(store) == before


def test_unset_needs_an_option(store: Path) -> None:  # noqa: F811
    result = invoke("experiment", "unset", "home")
    assert result.exit_code == 2
    assert "name at least one setting to remove" in result.stderr


def test_set_checks_its_options_once_before_the_store_opens(
    store: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import abeval.api.configuration as configuration

    real, windows = configuration.window, []

    def counted(*bounds: object) -> object:
        windows.append(bounds)
        return real(*bounds)  # type: ignore[arg-type]

    monkeypatch.setattr(configuration, "window", counted)
    result = invoke("experiment", "set", "home", "--to", "2030-01-01", "--alpha", "0.1")
    assert result.exit_code == 0, result.stderr
    assert windows == [(None, "2030-01-01")]  # the CLI's check; store.set checks nothing again
    absent = runner.invoke(app, ["experiment", "set", "home", "--db", "absent.duckdb"])
    assert (absent.exit_code, absent.stderr) == (
        2,
        "Error: give --control, --split, --from, --to, --target-propensities or an option "
        "to record\n",
    )
    assert not Path("absent.duckdb").exists()


def test_checked_settings_are_given_whole(tmp_path: Path) -> None:
    import abeval
    from abeval import api

    checked = api.checked_settings(control="control", window_from="2026-03-01")
    assert (checked.control, checked.window_from, checked.window_to) == (
        "control",
        datetime(2026, 3, 1),
        None,
    )
    refused = r"^give either checked settings or keyword settings"
    with abeval.open(tmp_path / "s.duckdb") as opened, pytest.raises(TypeError, match=refused):
        opened.set("home", checked, split="control=50,treatment=50")


def test_show_unknown_experiment(store: Path) -> None:  # noqa: F811
    result = invoke("experiment", "show", "hom")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: no experiment 'hom' in the store; did you mean home?")


# --- report and power read the record ---


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("config")
    events = tmp / "events.csv"
    write_events(SimulationConfig(users=2000, seed=5, days=4, pre_period_days=4), events)
    db = str(tmp / "store.duckdb")
    assert runner.invoke(app, ["ingest", str(events), "--db", db, "-q"]).exit_code == 0
    recorded = ["--guardrails", "revenue_per_user:2%", "--alpha", "0.1", "--plan-days", "30"]
    result = runner.invoke(app, ["experiment", "set", "home-reco-v2", *recorded, "--db", db])
    assert result.exit_code == 0, result.output
    return db


def report(db: str, *args: str) -> dict[str, object]:
    result = runner.invoke(
        app, ["report", "-e", "home-reco-v2", "--db", db, "--format", "json", "--no-offline", *args]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def test_report_uses_the_record_and_a_flag_overrides_it(sim: str) -> None:
    r = report(sim, "--alpha", "0.2")
    s = r["settings"]
    assert isinstance(s, dict)
    assert (s["alpha"], s["guardrails"], s["margins"], s["plan_days"]) == (
        0.2,
        ["revenue_per_user"],
        {"revenue_per_user": 0.02},
        30,
    )
    assert s["sources"] == {
        "control": "default",
        "window": "default",
        "primary": "default",
        "secondary": "default",
        "guardrails": "record",
        "caps": "default",
        "cuped_days": "default",
        "target_mde": "default",
        "alpha": "flag",
        "correction": "default",
        "plan_users": "default",
        "plan_days": "record",
    }
    # 4 days of a 30-day plan: the decision waits and says why.
    (d,) = r["decisions"]  # type: ignore[misc]
    assert (d["decision"], d["basis"]) == ("keep_running", "plan_not_reached")
    assert d["reason"] == "day 4 of 30; an early read needs --sequential"
    assert d["guardrails"][0]["margin"] == 0.02
    # The record is the experiment's own: the page says so in text too.
    text = runner.invoke(
        app, ["report", "-e", "home-reco-v2", "--db", sim, "--format", "text", "--no-offline"]
    ).stdout
    assert "settings recorded: guardrails, alpha, planned days; defaults: control" in text


def test_a_one_off_plan_cannot_loosen_the_recorded_one(sim: str) -> None:
    # issue 36, item 2: `--plan-days 1` over a recorded 30-day plan would unlock
    # a fixed-horizon decision on day 4
    args = ["report", "-e", "home-reco-v2", "--db", sim, "--no-offline", "--plan-days", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: --plan-days 1: the recorded plan is 30 days, and one report cannot loosen "
        "it; change the plan with `abeval experiment set home-reco-v2 --plan-days N`"
    ]
    # a stricter one-off plan is a flag like any other
    (d,) = report(sim, "--plan-days", "40")["decisions"]  # type: ignore[misc]
    assert (d["basis"], d["progress"]["plan_days"]) == ("plan_not_reached", 40)


def test_without_a_plan_the_decision_is_sequential(sim: str) -> None:
    r = report(sim, "--plan-days", "30")  # the recorded plan, not reached
    (d,) = r["decisions"]  # type: ignore[misc]
    assert d["basis"] == "plan_not_reached"
    runner.invoke(app, ["experiment", "unset", "home-reco-v2", "--plan-days", "--db", sim])
    try:
        (d,) = report(sim)["decisions"]  # type: ignore[misc]
        assert (d["basis"], d["progress"]) == ("sequential_no_plan", None)
    finally:
        runner.invoke(app, ["experiment", "set", "home-reco-v2", "--plan-days", "30", "--db", sim])


def test_no_plan_decides_on_the_sequential_intervals(sim: str) -> None:
    runner.invoke(app, ["experiment", "unset", "home-reco-v2", "--plan-days", "--db", sim])
    try:
        plain = report(sim)
        sequential = report(sim, "--sequential")
    finally:
        runner.invoke(app, ["experiment", "set", "home-reco-v2", "--plan-days", "30", "--db", sim])
    (d,) = plain["decisions"]  # type: ignore[misc]
    (s,) = sequential["decisions"]  # type: ignore[misc]
    assert (d["basis"], s["basis"]) == ("sequential_no_plan", "sequential_requested")
    # The decision's intervals are the group-sequential ones, the page's too (one
    # basis); the fixed-horizon one, narrower, is there only for reference (an
    # interval is unbounded when a Fieller interval at the boundary has no end).
    shown = {m["metric"]: m for m in plain["metrics"]}  # type: ignore[attr-defined]
    for p in d["primaries"]:
        m = shown[p["metric"]]
        assert m["basis"] == "group_sequential"
        assert m["interval"] == pytest.approx(p["interval"], rel=1e-9) if p["interval"] else True
        reference = m["reference_fixed_horizon"]["relative"]
        fixed = reference["ci_adjusted"] or reference["ci"]
        if p["interval"] is not None:
            lo, hi = p["interval"]
            assert hi - lo > fixed[1] - fixed[0]


def test_power_is_planned_at_the_adjusted_alpha(sim: str) -> None:
    """Users for the target MDE and for a guardrail's margin against statsmodels'
    normal power at α/m (Holm's smallest step): the recorded α is 0.1, the two
    primary metrics make m = 2, the one guardrail m = 1."""
    from statsmodels.stats.power import zt_ind_solve_power

    r = report(sim)
    for p in r["power"]:  # type: ignore[attr-defined]
        need = p["needed_for_target"]
        assert need["alpha"] == pytest.approx(0.1 / 2)
        sd = need["baseline_variance"] ** 0.5
        effect = 0.02 * abs(need["baseline_mean"]) / sd
        per_arm = zt_ind_solve_power(effect_size=effect, alpha=0.1 / 2, power=0.8, ratio=1.0)
        assert need["users_by_arm"][0] == pytest.approx(float(per_arm), abs=1)
    (g,) = r["guardrail_power"]  # type: ignore[misc]
    need = g["needed"]
    effect = 0.02 * abs(need["baseline_mean"]) / need["baseline_variance"] ** 0.5
    per_arm = zt_ind_solve_power(effect_size=effect, alpha=0.1, power=0.8, ratio=1.0)
    assert (g["metric"], g["margin"], need["alpha"]) == ("revenue_per_user", 0.02, 0.1)
    assert need["users_by_arm"][0] == pytest.approx(float(per_arm), abs=1)
    planned = max(p["needed_for_target"]["total_users"] for p in r["power"])  # type: ignore[attr-defined]
    assert (g["planned_users"], g["planned_rule"]) == (planned, "target_mde")
    assert g["enough"] is (need["total_users"] <= planned)
    # `abeval power` plans the same way and names the guardrail.
    out = runner.invoke(app, ["power", "-e", "home-reco-v2", "--db", sim]).stdout
    assert out.startswith(
        "home-reco-v2: a fixed-horizon test at alpha 0.05 (0.1 over 2 primary comparisons, "
        "Holm's smallest step) and 80% power\n"
    )
    assert "guardrail revenue_per_user (treatment): showing it within its 2.00% margin" in out


def test_cuped_is_named_only_where_used(sim: str) -> None:
    r = report(sim)
    used = [m["label"] for m in r["metrics"] if m["comparison"]["cuped"]]  # type: ignore[attr-defined]
    assert used  # the simulation has a pre-period
    args = ["report", "-e", "home-reco-v2", "--db", sim, "--format", "text", "--no-offline"]
    text = runner.invoke(app, args).stdout
    assert f"; CUPED on a 14-day pre-period for {', '.join(used)}\n" in text
    off = runner.invoke(app, [*args, "--cuped-days", "0"]).stdout
    assert "; CUPED off\n" in off


def test_tables_show_the_absolute_lift(sim: str, tmp_path: Path) -> None:
    from abeval.formatting import signed

    r = report(sim)
    args = ["report", "-e", "home-reco-v2", "--db", sim, "--no-offline"]
    text = runner.invoke(app, [*args, "--format", "text"]).stdout
    page = tmp_path / "r.html"
    assert runner.invoke(app, [*args, "-o", str(page)]).exit_code == 0
    html = page.read_text()
    for m in r["metrics"]:  # type: ignore[attr-defined]
        effect = m["comparison"]["absolute"]["effect"]
        row = next(line for line in text.splitlines() if line[2:].startswith(m["label"] + " "))
        assert row.split()[len(m["label"].split()) + 3] == signed(effect)
        assert "absolute lift: treatment − control" in html
        assert f">{signed(effect)} absolute</span>" in html


def test_a_plan_recorded_after_the_data_reached_it_is_flagged(store: Path) -> None:  # noqa: F811
    """The fixture's data have two days and two users: a plan of 2 users and 2 days
    was reached when recorded (a plan made after peeking), one of 3 users was not."""
    assert invoke("experiment", "set", "home", "--plan-users", "3").exit_code == 0
    assert stored(store)[2]["plan_recorded"]["after_data"] is False  # type: ignore[index]
    assert (
        invoke("experiment", "set", "home", "--plan-users", "2", "--plan-days", "2").exit_code == 0
    )
    found = stored(store)[2]["plan_recorded"]  # type: ignore[index]
    assert (found["after_data"], found["plan_users"], found["plan_days"]) == (True, 2, 2)
    shown = invoke("experiment", "show", "home").stdout
    assert (
        "on data to 2024-05-02 11:00 UTC: day 2, 2 users; the data had reached it already: "
        "a plan made after the result could be seen\n"
    ) in shown
    # the report says it on its METHOD line, and a run's own stricter plan is not stamped
    text = invoke("report", "-e", "home", "--no-offline", "--no-ope", "-f", "text", "-o", "-")
    method = next(line for line in text.stdout.splitlines() if line.startswith("METHOD"))
    assert method.endswith(
        "day 2, 2 users; the data had reached it already: a plan made after the result "
        "could be seen)"
    )
    args = ("report", "-e", "home", "--no-offline", "--no-ope", "-f", "json")
    doc = json.loads(invoke(*args).stdout)
    assert doc["settings"]["plan_recorded"]["after_data"] is True
    stricter = invoke(*args, "--plan-users", "5")
    assert json.loads(stricter.stdout)["settings"]["plan_recorded"] is None
