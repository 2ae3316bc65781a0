"""The control arm is never guessed (docs/metrics.md#control-arm), and ``--fail-on``
gates on the decisions; both through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value\n"


def _events(arms: dict[str, int], experiment: str = "rank") -> str:
    """``users`` users per arm; each is exposed, sees two items, clicks the first
    when their number is even and buys for 5.0 when it is a multiple of 3."""
    lines = [HEADER]
    for arm, users in arms.items():
        for i in range(users):
            u = f"{arm}-{i}"
            lines.append(f"{experiment},{arm},{u},2024-05-01T08:00:00,exposure,,,,\n")
            for pos in (1, 2):
                lines.append(
                    f"{experiment},{arm},{u},2024-05-01T08:01:00,impression,{u}-r,i{pos},{pos},\n"
                )
            if i % 2 == 0:
                lines.append(f"{experiment},{arm},{u},2024-05-01T08:02:00,click,{u}-r,i1,,\n")
            if i % 3 == 0:
                lines.append(f"{experiment},{arm},{u},2024-05-01T08:03:00,purchase,{u}-r,i1,,5.0\n")
    return "".join(lines)


def _store(tmp_path: Path, arms: dict[str, int]) -> str:
    (tmp_path / "events.csv").write_text(_events(arms))
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", str(tmp_path / "events.csv"), "--db", db, "-q"])
    assert result.exit_code == 0, result.output
    return db


def _report(db: str, *args: str) -> object:
    return runner.invoke(app, ["report", "-e", "rank", "--db", db, "--no-offline", *args])


def _json(db: str, *args: str) -> dict:
    result = _report(db, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def rankers(tmp_path: Path) -> str:
    return _store(tmp_path, {"old_ranker": 20, "new_ranker": 20})


def test_no_rule_applies_is_an_error_naming_both_ways(rankers: str) -> None:
    result = _report(rankers, "--format", "json")
    assert result.exit_code == 2  # the option is needed: a usage error
    assert result.stderr.strip() == (
        "Error: --control: experiment 'rank' has no recorded control and no arm named "
        "'control' (arms: new_ranker, old_ranker); name one, or record it with "
        "`abeval experiment set rank --control ARM`"
    )
    assert result.stdout == ""


def test_the_option_chooses(rankers: str) -> None:
    d = _json(rankers, "--control", "old_ranker")
    assert (d["settings"]["control"], d["settings"]["control_rule"]) == ("old_ranker", "option")
    assert [a["arm"] for a in d["arms"] if a["is_control"]] == ["old_ranker"]
    assert [x["arm"] for x in d["decisions"]] == ["new_ranker"]
    assert {m["arm"] for m in d["metrics"]} == {"new_ranker"}
    text = _report(rankers, "--format", "text", "--control", "old_ranker").stdout
    assert "control old_ranker (chosen with --control); unit user" in text


def test_the_recorded_control_chooses_and_the_option_overrides_it(rankers: str) -> None:
    set_ = runner.invoke(
        app, ["experiment", "set", "rank", "--control", "old_ranker", "--db", rankers]
    )
    assert set_.exit_code == 0, set_.output
    assert set_.stderr == "rank: control old_ranker; split equal\n"
    d = _json(rankers)
    assert (d["settings"]["control"], d["settings"]["control_rule"]) == ("old_ranker", "recorded")
    d = _json(rankers, "--control", "new_ranker")
    assert (d["settings"]["control"], d["settings"]["control_rule"]) == ("new_ranker", "option")


def test_an_arm_named_control_chooses(tmp_path: Path) -> None:
    db = _store(tmp_path, {"control": 10, "a_treatment": 10})
    d = _json(db)
    assert (d["settings"]["control"], d["settings"]["control_rule"]) == ("control", "named_control")
    set_ = runner.invoke(
        app, ["experiment", "set", "rank", "--split", "control=1,a_treatment=1", "--db", db]
    )
    assert (
        set_.stderr
        == "rank: control control (the arm named control); split control=50%, a_treatment=50%\n"
    )
    # A recorded control wins over the name.
    runner.invoke(app, ["experiment", "set", "rank", "--control", "a_treatment", "--db", db])
    d = _json(db)
    assert (d["settings"]["control"], d["settings"]["control_rule"]) == ("a_treatment", "recorded")


def test_html_says_which_rule_chose(rankers: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = _report(rankers, "--control", "old_ranker", "-o", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert '(control: <span data-field="control-rule">chosen with --control</span>)' in page


def test_a_control_that_is_not_an_arm_suggests_one(rankers: str) -> None:
    result = _report(rankers, "--format", "json", "--control", "old_rankr")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: --control 'old_rankr': experiment 'rank' has no arm 'old_rankr'; did you mean "
        "old_ranker? "
        "its arms are new_ranker, old_ranker"
    )


def test_set_a_control_that_is_not_an_arm_changes_nothing(rankers: str) -> None:
    result = runner.invoke(
        app, ["experiment", "set", "rank", "--control", "nwe_ranker", "--db", rankers]
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: experiment 'rank' has no arm 'nwe_ranker'; did you mean new_ranker? "
        "its arms are new_ranker, old_ranker"
    )
    con = duckdb.connect(rankers, read_only=True)
    try:
        assert con.execute("SELECT control_arm FROM experiments").fetchall() == [(None,)]
    finally:
        con.close()


# --------------------------------------------------------------------------- --fail-on


@pytest.fixture
def mismatched(tmp_path: Path) -> str:
    """200 control users against 20 treatment users, recorded as a 50/50 split:
    χ² = (200 − 110)²/110 · 2 ≈ 147, p ≈ 1e-33, a sample ratio mismatch, so the
    decision is invalid."""
    db = _store(tmp_path, {"control": 200, "treatment": 20})
    runner.invoke(
        app, ["experiment", "set", "rank", "--split", "control=1,treatment=1", "--db", db]
    )
    return db


def test_fail_on_sets_exit_code_3_after_writing(mismatched: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = _report(
        mismatched, "--format", "json", "-o", str(out), "--fail-on", "invalid,roll_back"
    )
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"wrote {out}",
        "--fail-on: treatment invalid; exit code 3",
    ]
    d = json.loads(out.read_text())
    assert [(x["arm"], x["decision"], x["srm_flagged"]) for x in d["decisions"]] == [
        ("treatment", "invalid", True)
    ]


def test_without_fail_on_or_with_other_decisions_the_exit_code_is_0(mismatched: str) -> None:
    assert _report(mismatched, "--format", "json").exit_code == 0
    assert _report(mismatched, "--format", "json", "--fail-on", "roll_back,ship").exit_code == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("invalid,rollback", "unknown decision 'rollback'"),
        (",", "no decision given"),
    ],
)
def test_fail_on_names_are_checked(rankers: str, value: str, message: str) -> None:
    result = _report(rankers, "--format", "json", "--fail-on", value)
    assert result.exit_code == 2
    assert (
        f"--fail-on {value!r}: {message}; choose from ship, roll_back, keep_running, "
        "no_effect, invalid" in " ".join(result.stderr.replace("│", " ").split())
    )
    assert result.stdout == ""


def test_every_format_starts_with_the_decision(mismatched: str, tmp_path: Path) -> None:
    d = _json(mismatched)
    assert list(d)[: list(d).index("settings")][-1] == "decisions"
    (decision,) = d["decisions"]
    assert decision["decision"] == "invalid"
    assert decision["reason"].startswith("sample ratio mismatch: the arms are not comparable")
    assert any(n.startswith("Decision per treatment arm") for n in d["methodology"]["notes"])
    text = _report(mismatched, "--format", "text").stdout
    assert text.splitlines()[0] == f"DECISION treatment: INVALID: {decision['reason']}"
    out = tmp_path / "r.html"
    assert _report(mismatched, "-o", str(out)).exit_code == 0
    page = out.read_text()
    card = page.index('data-for-arm="treatment" data-decision="invalid"')
    assert card < page.index('id="health"') and card < page.index('id="decision"')
