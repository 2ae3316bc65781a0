"""Interleaved runs on the program page (issue 33): a run linked to an A/B test
(``experiment set X --interleaving-of Y``) is shown under that test's row, a run
linked to none in a row of its own, both with Δ_AB, its interval, the ranker
preferred (or "no preference yet") and the users, as ``abeval report`` gives them
for the run; never "no report". The program's statistics stay over the A/B tests:
with the runs in the store they are those of the same store without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agreement_store import simulate_experiment, simulate_interleaved_run
from typer.testing import CliRunner

import abeval
from abeval.cli import app

runner = CliRunner()

#: A/B test -> its true CTR lift; each has an interleaved run of the same rankers.
LIFTS = {"exp-a": -0.25, "exp-b": 0.0, "exp-c": 0.25}
#: The run linked to no test (its A/B test is exp-c, not recorded as such).
UNLINKED = "exp-c-interleaved"


def _run(name: str) -> str:
    return f"{name}-interleaved"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the A/B tests alone, the same A/B tests with their interleaved runs)."""
    work = tmp_path_factory.mktemp("program-interleaved")
    plain, both = str(work / "plain.duckdb"), str(work / "both.duckdb")
    tests = [
        simulate_experiment(work / f"{name}.csv", name, lift, seed, 600)
        for seed, (name, lift) in enumerate(LIFTS.items(), start=21)
    ]
    with abeval.open(plain) as store:
        for events in tests:
            store.ingest(events)
    with abeval.open(both) as store:
        for seed, (events, (name, lift)) in enumerate(zip(tests, LIFTS.items(), strict=True)):
            store.ingest(events)
            run = work / f"{_run(name)}.csv"
            store.ingest(simulate_interleaved_run(run, _run(name), lift, seed + 300, 400, 3))
            if _run(name) != UNLINKED:
                store.set(_run(name), interleaving_of=name)
    return plain, both


@pytest.fixture(scope="module")
def program(stores: tuple[str, str]) -> Any:
    with abeval.open(stores[1], read_only=True) as store:
        return store.program()


@pytest.fixture(scope="module")
def sections(stores: tuple[str, str]) -> dict[str, Any]:
    """Each run's interleaving section as ``abeval report`` gives it."""
    with abeval.open(stores[1], read_only=True) as store:
        return {_run(n): store.report(_run(n)).interleaving for n in LIFTS}


def _words(section: Any) -> str:
    if section.decision == "ranker_preferred":
        return f"{section.preferred} preferred"
    assert section.decision == "no_preference"
    return "no preference yet"


def test_runs_sit_under_their_tests_and_an_unlinked_run_in_its_own_row(
    program: Any, sections: dict[str, Any]
) -> None:
    rows = {r.experiment: r for r in program.stored}
    assert set(rows) == {*LIFTS, UNLINKED}
    for name in LIFTS:
        runs = [x.experiment for x in rows[name].interleaved]
        assert runs == ([] if _run(name) == UNLINKED else [_run(name)])
    own = rows[UNLINKED]
    assert own.run is not None and own.run.of is None
    assert own.run.section == sections[UNLINKED]


def test_the_statistics_are_over_the_ab_tests_only(program: Any, stores: tuple[str, str]) -> None:
    with abeval.open(stores[0], read_only=True) as store:
        alone = store.program()
    assert program.experiments == len(LIFTS)
    assert {x.experiment for x in program.lifts} == set(LIFTS)
    assert program.overall == alone.overall
    assert program.priors == alone.priors
    for x, y in zip(program.lifts, alone.lifts, strict=True):
        assert (x.experiment, x.metric, x.lift, x.status) == (
            y.experiment,
            y.metric,
            y.lift,
            y.status,
        )
        assert x.se == pytest.approx(y.se, rel=1e-9)  # the engine's last bits


def test_json_gives_each_runs_delta_interval_preference_and_users(
    program: Any, sections: dict[str, Any]
) -> None:
    doc = program.to_dict()
    assert {e["experiment"] for e in doc["experiments"]} <= set(LIFTS)
    rows = {r["experiment"]: r for r in doc["store_experiments"]}
    found = {x["experiment"]: (k, x) for k, r in rows.items() for x in r["interleaving"]}
    assert set(found) == {_run(n) for n in LIFTS}
    for run, (row, x) in found.items():
        s = sections[run]
        assert row == (run if run == UNLINKED else run.removesuffix("-interleaved"))
        assert x["interleaving_of"] == (None if run == UNLINKED else row)
        assert (x["team_a"], x["team_b"]) == (s.team_a, s.team_b) == ("treatment", "control")
        assert x["delta"] == s.clicks.delta
        assert x["interval"] == list(s.clicks.interval)
        assert (x["decision"], x["preferred"]) == (s.decision, s.preferred)
        assert x["preference_words"] == _words(s)
        # every user of the run is analysed; those with a decided request are fewer
        assert x["users"] == 400 >= s.clicks.users
    assert rows[UNLINKED]["decision_words"] == _words(sections[UNLINKED])
    assert rows[UNLINKED]["decision"] is None


def test_text_and_page_show_the_runs_never_no_report(
    stores: tuple[str, str], sections: dict[str, Any], tmp_path: Path
) -> None:
    db = stores[1]
    text = runner.invoke(app, ["program", "--db", db])
    assert text.exit_code == 0, text.output
    assert "no report" not in text.stdout
    for run, s in sections.items():
        line = next(x for x in text.stdout.splitlines() if f" {run} " in f" {x} ")
        assert _words(s) in line and "400" in line
        assert ("↳" in line) == (run != UNLINKED)
    page = tmp_path / "program.html"
    html = runner.invoke(app, ["program", "--db", db, "-f", "html", "-o", str(page)])
    assert html.exit_code == 0, html.output
    body = page.read_text()
    assert "no report" not in body
    for name in LIFTS:
        if _run(name) != UNLINKED:
            assert f'data-interleaved="{_run(name)}" data-of="{name}"' in body
    assert f'data-experiment="{UNLINKED}"' in body
    data = json.loads(runner.invoke(app, ["program", "--db", db, "-f", "json"]).stdout)
    assert all("interleaving" in r for r in data["store_experiments"])


def test_a_filter_keeps_a_kept_tests_linked_run_under_it(stores: tuple[str, str]) -> None:
    """Runs carry no tag of their own: ``tag`` keeps the tests and their linked runs."""
    with abeval.open(stores[1]) as store:
        for name in ("exp-a", "exp-b"):
            store.set(name, tag=["ranking"])
        tagged = store.program(tag="ranking")
    rows = {r.experiment: r for r in tagged.stored}
    assert set(rows) == {"exp-a", "exp-b"}
    assert [x.experiment for x in rows["exp-a"].interleaved] == [_run("exp-a")]
    assert tagged.experiments == 2
