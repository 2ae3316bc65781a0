"""The sample-ratio check never switches off with a recorded split (issue 38,
item 3): users in an arm outside the split are a mismatch (p = 0), as they are
without the split; weights that give no expected count fail the check; a split
is checked when recorded (finite, positive, every arm a share that can be counted)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.stats import srm_test

runner = CliRunner()
EXPERIMENT = "home-reco-v2"


def test_users_in_an_arm_the_split_gives_no_share_are_a_certain_mismatch() -> None:
    result = srm_test([600, 600, 150], [0.5, 0.5, 0.0])
    assert result.flagged and result.p_value == 0.0
    assert result.expected == (675.0, 675.0, 0.0)  # N·w/Σw of 1,350 users
    assert "150 users" in result.message


def test_an_arm_without_share_and_without_users_leaves_a_true_split_alone() -> None:
    with_empty = srm_test([500, 500, 0], [0.5, 0.5, 0.0])
    assert not with_empty.flagged and with_empty.p_value == pytest.approx(1.0)
    assert with_empty.dof == 1 and with_empty.expected == (500.0, 500.0, 0.0)


@pytest.mark.parametrize("weights", [[1.0, float("nan")], [1.0, math.inf], [1.0, -1.0], [0.0, 0.0]])
def test_weights_that_give_no_expected_counts_fail_the_check(weights: list[float]) -> None:
    result = srm_test([10, 10], weights)
    assert result.status == "invalid_input" and result.flagged and result.p_value is None


def test_huge_and_tiny_weights_give_the_true_expected_counts() -> None:
    # χ² of 55/45 against 50/50: (5²+5²)/50 = 1, whatever the scale of the weights
    for weights in ([1e308, 1e308], [1e-300, 1e-300], [5e307, 5e307]):
        result = srm_test([55, 45], weights)
        assert result.expected == (50.0, 50.0) and result.statistic == pytest.approx(1.0)


def _store(tmp: Path, split: str | None) -> str:
    """A store where the arm ``rogue`` (10% of the users) comes in after the split
    is recorded (or without any split recorded)."""
    config = SimulationConfig(
        users=1500,
        seed=5,
        days=4,
        pre_period_days=2,
        arms=("control", "treatment", "rogue"),
        split=(0.45, 0.45, 0.1),
    )
    write_events(config, tmp / "all.csv")
    with (tmp / "all.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    arm = rows[0].index("arm")
    for name, keep in (("main.csv", lambda r: r[arm] != "rogue"), ("rogue.csv", None)):
        with (tmp / name).open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(rows[0])
            out.writerows(r for r in rows[1:] if (keep(r) if keep else r[arm] == "rogue"))
    db = str(tmp / "store.duckdb")
    assert runner.invoke(app, ["ingest", str(tmp / "main.csv"), "--db", db, "-q"]).exit_code == 0
    if split is not None:
        done = runner.invoke(app, ["experiment", "set", EXPERIMENT, "--split", split, "--db", db])
        assert done.exit_code == 0, done.output
    assert runner.invoke(app, ["ingest", str(tmp / "rogue.csv"), "--db", db, "-q"]).exit_code == 0
    return db


def _report(db: str) -> dict[str, object]:
    result = runner.invoke(app, ["report", "-e", EXPERIMENT, "--format", "json", "--db", db])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("split", [None, "control=50,treatment=50"])
def test_an_arm_outside_the_recorded_split_makes_the_report_invalid(
    tmp_path: Path, split: str | None
) -> None:
    db = _store(tmp_path, split)
    report = _report(db)
    srm = report["health"]["srm"]  # type: ignore[index]
    assert srm["flagged"] is True and srm["p_value"] is not None and srm["p_value"] < 0.001
    decisions = report["decisions"]
    assert {d["decision"] for d in decisions} == {"invalid"}  # type: ignore[attr-defined]
    text = runner.invoke(app, ["report", "-e", EXPERIMENT, "--format", "text", "--db", db])
    assert "(MISMATCH)" in text.stdout and "INVALID" in text.stdout


@pytest.mark.parametrize(
    ("split", "reason"),
    [
        ("control=1e200,treatment=1e-200,rogue=1", "one in a million"),
        ("control=1,treatment=1,rogue=1e-7", "one in a million"),
        ("control=1,treatment=1,rogue=0", "positive weights"),
        ("control=1,treatment=1,rogue=nan", "positive weights"),
    ],
)
def test_a_split_with_an_arm_of_no_countable_share_is_refused(
    tmp_path: Path, split: str, reason: str
) -> None:
    db = _store(tmp_path, None)
    result = runner.invoke(app, ["experiment", "set", EXPERIMENT, "--split", split, "--db", db])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --split") and reason in lines[0]


def test_a_split_of_huge_equal_weights_is_recorded_as_equal_shares(tmp_path: Path) -> None:
    db = _store(tmp_path, None)
    split = "control=1e308,treatment=1e308,rogue=1e308"
    done = runner.invoke(app, ["experiment", "set", EXPERIMENT, "--split", split, "--db", db])
    assert done.exit_code == 0, done.output
    expected = _report(db)["health"]["srm"]["expected"]  # type: ignore[index]
    assert expected == pytest.approx([500.0, 500.0, 500.0])  # 1,500 users, a third each
