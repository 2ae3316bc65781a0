"""What was decided, recorded (issue 32 item 2): ``experiment set --owner
--hypothesis --tag --status --decided-on`` writes the row of
``experiment_outcomes``, ``experiment show`` prints it (text and JSON, with the
target probabilities and evaluations recorded), ``experiment unset`` forgets it;
a bad value is one line naming the option and its fix, exit code 2, and leaves
the store as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

# The store of tests/test_experiments_cli.py: experiment home, arms control and treatment.
from test_experiments_cli import invoke, store  # noqa: F401

import abeval


def outcome(db: Path) -> tuple[Any, ...] | None:
    """The experiment's row of ``experiment_outcomes`` (tags parsed), None when none."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT owner, hypothesis, tags, status, decided_on FROM experiment_outcomes "
            "WHERE experiment = 'home'"
        ).fetchone()
    finally:
        con.close()
    if row is None:
        return None
    return (row[0], row[1], json.loads(row[2]) if row[2] else None, row[3], row[4])


def test_set_records_what_was_decided_and_show_prints_it(store: Path) -> None:  # noqa: F811
    result = invoke(
        "experiment", "set", "home", "--owner", "ana", "--hypothesis", "Fresher items lift CTR",
        "--tag", "ranking", "--tag", "ui", "--status", "shipped", "--decided-on", "2026-03-20",
    )  # fmt: skip
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        "home: shipped on 2026-03-20; owner ana; tags ranking, ui; "
        "hypothesis 'Fresher items lift CTR'\n"
    )
    assert outcome(store) == ("ana", "Fresher items lift CTR", ["ranking", "ui"], "shipped",
                              "2026-03-20")  # fmt: skip

    # --tag adds to the tags recorded, each kept once; the rest is left as it was
    assert invoke("experiment", "set", "home", "--tag", "ui", "--tag", "mobile").exit_code == 0
    assert outcome(store) == ("ana", "Fresher items lift CTR", ["ranking", "ui", "mobile"],
                              "shipped", "2026-03-20")  # fmt: skip

    shown = invoke("experiment", "show", "home")
    assert (shown.exit_code, shown.stderr) == (0, "")
    assert shown.stdout.splitlines()[-6:] == [
        "  status: shipped on 2026-03-20",
        "  owner: ana",
        "  hypothesis: Fresher items lift CTR",
        "  tags: ranking, ui, mobile",
        "  target probabilities: none recorded",
        "  evaluations: none recorded",
    ]
    document = json.loads(invoke("experiment", "show", "home", "--format", "json").stdout)
    assert {k: document[k] for k in ("owner", "hypothesis", "tags", "status", "decided_on")} == {
        "owner": "ana",
        "hypothesis": "Fresher items lift CTR",
        "tags": ["ranking", "ui", "mobile"],
        "status": "shipped",
        "decided_on": "2026-03-20",
    }
    assert document["target_propensities"] is None and document["evaluations"] == []

    # the API reads the same record
    with abeval.open(store, read_only=True) as opened:
        record = opened.experiment("home")
    assert record.outcome.tags == ("ranking", "ui", "mobile")
    assert record.to_dict() == document


def test_status_running_forgets_the_date_and_unset_forgets_each_part(store: Path) -> None:  # noqa: F811
    args = ("--status", "rolled_back", "--decided-on", "2026-04-02", "--owner", "bo", "--tag", "x")
    assert invoke("experiment", "set", "home", *args).exit_code == 0
    assert outcome(store) == ("bo", None, ["x"], "rolled_back", "2026-04-02")
    assert invoke("experiment", "set", "home", "--status", "running").exit_code == 0
    assert outcome(store) == ("bo", None, ["x"], "running", None)

    result = invoke("experiment", "unset", "home", "--tags", "--owner")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == "home: removed --owner, --tags"
    assert outcome(store) == (None, None, None, "running", None)
    assert invoke("experiment", "unset", "home", "--status").exit_code == 0
    assert outcome(store) is None  # nothing left to record: no row


BAD = [
    (
        ("--decided-on", "2026-03-20"),
        "Error: --decided-on '2026-03-20': 'home' is not decided; give --status shipped, "
        "rolled_back or abandoned with the date of the decision",
    ),
    (
        ("--status", "running", "--decided-on", "2026-03-20"),
        "Error: --decided-on '2026-03-20': a running experiment is not decided; give --status "
        "shipped, rolled_back or abandoned with the date of the decision",
    ),
    (
        ("--status", "shipped", "--decided-on", "20.3.2026"),
        "Error: --decided-on '20.3.2026': give the date of the decision as YYYY-MM-DD, "
        "such as 2026-03-20",
    ),
    (
        ("--status", "won"),
        "Error: --status 'won': choose one of running, shipped, rolled_back, abandoned",
    ),
    (("--owner", "  "), "Error: --owner: give the experiment's owner, not a blank"),
    (("--hypothesis", ""), "Error: --hypothesis: give the experiment's hypothesis, not a blank"),
    (
        ("--tag", "ranking,ui"),
        "Error: --tag 'ranking,ui': give one tag per option, not blank and without ; or , "
        "(repeat the option for several tags)",
    ),
]


@pytest.mark.parametrize(("args", "line"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_value_is_one_line_exit_2_and_nothing_recorded(
    store: Path,  # noqa: F811
    args: tuple[str, ...],
    line: str,
) -> None:
    assert invoke("experiment", "set", "home", "--owner", "ana").exit_code == 0
    result = invoke("experiment", "set", "home", "--tag", "kept", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", line + "\n")
    assert outcome(store) == ("ana", None, None, None, None)


def test_the_api_checks_the_same_options() -> None:
    with pytest.raises(abeval.OptionError) as caught:
        abeval.api.outcome_options(status="running", decided_on="2026-03-20")
    assert caught.value.parameter == "decided_on"
    change = abeval.api.outcome_options(tag=["a", " b ", "a"], decided_on="2026-03-20")
    assert (change.tags, change.decided_on) == (("a", "b"), "2026-03-20")
