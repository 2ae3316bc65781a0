"""Guardrails as written (issue 38, item 5): a metric named twice in
``--guardrails`` is refused with one line (the looser margin was kept), and a
primary metric given a guardrail margin is judged against it as well."""

from __future__ import annotations

import json

import pytest
from ingest_store import simulated_store
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()
EXPERIMENT = "home-reco-v2"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return simulated_store(tmp_path_factory.mktemp("guardrails"), users=2000, seed=5)


@pytest.mark.parametrize(
    "command",
    [["report", "-e", EXPERIMENT, "--format", "json"], ["experiment", "set", EXPERIMENT]],
)
@pytest.mark.parametrize(
    "guardrails",
    [
        "impressions_per_user:1%,impressions_per_user:9%",
        "impressions_per_user,ctr,impressions_per_user:5%",
        "ctr,ctr",
    ],
)
def test_a_guardrail_named_twice_is_refused_in_one_line(
    db: str, command: list[str], guardrails: str
) -> None:
    result = runner.invoke(app, [*command, "--guardrails", guardrails, "--db", db])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --guardrails") and "twice" in lines[0]
    shown = runner.invoke(app, ["experiment", "show", EXPERIMENT, "-f", "json", "--db", db])
    assert json.loads(shown.stdout)["config"] == {}  # nothing recorded


def test_a_primary_metric_with_a_guardrail_margin_is_judged_against_it(db: str) -> None:
    args = ["report", "-e", EXPERIMENT, "--format", "json", "--db", db]
    result = runner.invoke(app, [*args, "--primary", "ctr", "--guardrails", "ctr:0.1%"])
    assert result.exit_code == 0, result.output
    (decision,) = json.loads(result.stdout)["decisions"]
    (primary,) = decision["primaries"]
    (guardrail,) = decision["guardrails"]
    assert guardrail["metric"] == "ctr" and guardrail["margin"] == pytest.approx(0.001)
    low, high = primary["interval"]
    # a guardrail's harm is the drop its interval allows (higher CTR is better)
    assert guardrail["largest_harm"] == pytest.approx(-low)
    expected = "worse" if high < 0 else "underpowered" if -low > 0.001 else "passed"
    assert guardrail["guardrail"] == expected
    if expected != "passed":
        assert decision["decision"] != "ship"
