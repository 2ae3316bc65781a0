"""The program page from the store (issue 32 item 3): ``store.program()`` and
``abeval program`` without ``--history``.

On the agreement tests' small store (four simulated experiments with a known CTR
lift and ``bare``, which has exposures and purchases only): every experiment's
lift, interval and basis equal the report's JSON for that experiment (the report
is made here on its own, by ``store.report``); the program's statistics equal
those of ``abeval.program(history=...)`` fed the rows a user would write from
those reports and the statuses recorded; filters keep what they say; the CLI
writes the same JSON, a page linking each report, and text within 100 columns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from agreement_store import BARE, LIFTS, build_store
from typer.testing import CliRunner

import abeval
from abeval.cli import app

runner = CliRunner()

#: What was decided about each experiment: status, date, owner, tags.
DECIDED: dict[str, dict[str, Any]] = {
    "exp-a": {"status": "rolled_back", "decided_on": "2025-01-20", "owner": "bo"},
    "exp-b": {"status": "abandoned", "decided_on": "2025-01-21", "owner": "bo"},
    "exp-c": {"status": "shipped", "decided_on": "2025-02-03", "owner": "ana",
              "tag": ["ranking"]},
    "exp-d": {"status": "shipped", "decided_on": "2025-02-10", "owner": "ana",
              "tag": ["ranking", "ui"]},
}  # fmt: skip
NAMES = sorted([*LIFTS, BARE])


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = build_store(tmp_path_factory.mktemp("program"))
    with abeval.open(path) as store:
        for name, decided in DECIDED.items():
            store.set(name, **decided)
    return path


@pytest.fixture(scope="module")
def program(db: str) -> Any:
    with abeval.open(db, read_only=True) as store:
        return store.program()


@pytest.fixture(scope="module")
def reports(db: str) -> dict[str, dict[str, Any]]:
    """Each experiment's report JSON, as ``abeval report -f json`` writes it."""
    with abeval.open(db, read_only=True) as store:
        return {name: abeval.render.json_document(store.report(name)) for name in NAMES}


def _shown(report: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The arm the report ships, else its first treatment arm, and its primary metrics."""
    decisions = report["decisions"]
    arm = next((d["arm"] for d in decisions if d["decision"] == "ship"), decisions[0]["arm"])
    primaries = [m for m in report["metrics"] if m["arm"] == arm and m["role"] == "primary"]
    return arm, primaries


def test_every_experiment_is_listed_with_the_reports_lift(
    program: Any, reports: dict[str, dict[str, Any]]
) -> None:
    assert [r.experiment for r in program.stored] == NAMES
    assert program.primary == "ctr"
    for row in program.stored:
        arm, primaries = _shown(reports[row.experiment])
        assert row.arm == arm
        assert row.decision == next(d["decision"] for d in reports[row.experiment]["decisions"]
                                    if d["arm"] == arm)  # fmt: skip
        for m in primaries:
            shown = row.lift(m["metric"])
            assert shown is not None, (row.experiment, m["metric"])
            if m["lift"] is None:
                assert shown.lift is None
                continue
            assert math.isclose(shown.lift, m["lift"], rel_tol=0, abs_tol=1e-12)
            assert shown.basis == m["basis"]
            if m["interval"] is None:  # unbounded: the report shows none either
                assert shown.interval is None
                continue
            assert shown.interval is not None
            for got, want in zip(shown.interval, m["interval"], strict=True):
                assert math.isclose(got, want, rel_tol=0, abs_tol=1e-12)
        assert row.users == reports[row.experiment]["health"]["users_analysed"]
    # bare has no impression: no CTR lift, but its conversion lift counts
    bare = next(r for r in program.stored if r.experiment == BARE)
    ctr = bare.lift("ctr")
    assert ctr is None or ctr.lift is None
    assert {(r.experiment, r.metric) for r in program.lifts} >= {(BARE, "conversion")}
    assert BARE not in {r.experiment for r in program.lifts if r.metric == "ctr"}


def _history(db: str, reports: dict[str, dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The history file's rows a user would write from the reports: each primary
    metric's lift and standard error, the status, date and tags recorded."""
    with abeval.open(db, read_only=True) as store:
        last = {e.experiment: e.last_ts[:10] for e in store.experiments() if e.last_ts}
    rows = []
    for name in names:
        _, primaries = _shown(reports[name])
        decided = DECIDED.get(name, {})
        for m in primaries:
            se = m["comparison"]["relative"]["se"]
            if m["lift"] is None or not se:
                continue
            rows.append({
                "experiment": name, "metric": m["metric"], "lift": m["lift"], "se": se,
                "status": decided.get("status"), "date": decided.get("decided_on", last[name]),
                "tag": ";".join(decided.get("tag", [])),
            })  # fmt: skip
    return rows


def _statistics(document: dict[str, Any]) -> dict[str, Any]:
    shown = dict(document["program"])
    for key in ("source", "filters", "min_experiments", "store"):
        shown.pop(key, None)
    return shown


def test_the_statistics_are_the_history_paths(
    db: str, program: Any, reports: dict[str, dict[str, Any]]
) -> None:
    import pandas as pd

    rows = _history(db, reports, NAMES)
    frame = pd.DataFrame(rows)
    from_history = abeval.program(history=frame, primary=program.primary)
    assert _close(_statistics(program.to_dict()), _statistics(from_history.to_dict()))
    # the shipped experiments' raw impact is the sum of their reports' CTR lifts
    shipped = [r for r in program.stored if r.outcome.status == "shipped"]
    raw = sum(reports[r.experiment]["metrics"][0]["lift"] for r in shipped
              if reports[r.experiment]["metrics"][0]["metric"] == "ctr")  # fmt: skip
    assert program.overall.impact.shipped == 2
    assert math.isclose(program.overall.impact.raw, raw, abs_tol=1e-12)
    assert program.overall.win_rate.decided == 4  # exp-a, exp-b, exp-c, exp-d: bare undecided
    # a win: a decided experiment whose CTR lift's 95% interval (lift ± z·se) lies above 0
    z = 1.959963984540054
    wins = [r["experiment"] for r in rows if r["metric"] == "ctr" and r["status"] is not None
            and r["lift"] - z * r["se"] > 0]  # fmt: skip
    assert program.overall.win_rate.wins == len(wins)
    assert program.prior.kind == "none" and "at least 10 experiments" in program.prior.message


def test_filters_keep_what_they_say(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        tagged = store.program(tag="ranking")
        owned = store.program(owner="bo", until="2025-01-31")
    assert [r.experiment for r in tagged.stored] == ["exp-c", "exp-d"]
    assert [r.experiment for r in owned.stored] == ["exp-a", "exp-b"]
    assert tagged.to_dict()["program"]["filters"]["tag"] == "ranking"
    result = runner.invoke(app, ["program", "--db", db, "--owner", "ana", "--since", "2025-02-05"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        "Error: the store holds 1 experiment with owner ana, from 2025-02-05; a program "
        "needs at least 2 (ingest more, or widen --tag, --owner, --since, --until)"
    )


def _close(got: Any, want: Any) -> bool:
    """Equal JSON values, numbers to 1e-12."""
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(_close(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(_close(a, b) for a, b in zip(got, want, strict=True))
    return bool(got == want)


def test_the_cli_writes_the_json_a_page_with_links_and_narrow_text(
    db: str, program: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    as_json = runner.invoke(app, ["program", "--db", db, "-f", "json"])
    assert as_json.exit_code == 0, as_json.output
    # equal to 1e-12: DuckDB's parallel sums may differ in the last digit from run to run
    assert _close(json.loads(as_json.stdout), json.loads(json.dumps(program.to_dict())))
    assert as_json.stderr.splitlines()[0] == f"reading {NAMES[0]} (1 of {len(NAMES)})"

    text = runner.invoke(app, ["program", "--db", db])
    assert text.exit_code == 0
    assert max(len(line) for line in text.stdout.splitlines()) <= 100
    assert "Win rate: 2 of 4 decided won: 50.0%" in text.stdout

    (tmp_path / "out").mkdir()
    page = runner.invoke(app, ["program", "--db", db, "-f", "html", "-o", "out/program.html",
                               "--with-reports", "out/reports"])  # fmt: skip
    assert page.exit_code == 0, page.output
    html = (tmp_path / "out" / "program.html").read_text()
    for name in NAMES:
        assert (tmp_path / "out" / "reports" / f"{name}.html").is_file()
        assert f'href="reports/{name}.html"' in html
    assert "a prior needs at least 10 experiments" in html
