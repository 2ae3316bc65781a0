"""The interleaving section of `abeval report` (issue 33 item 2): on a tiny
interleaved log whose wins, losses and ties are counted by hand, Δ_AB, its
user-clustered interval (re-derived with numpy from the per-user counts), the
first picks, the clicks no team is credited with, the decision, and the same
numbers in text, JSON (validated by the schema), HTML and the API; on DuckDB and
PostgreSQL."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ingest_store import run

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,team"


def _rows() -> list[str]:
    """Three users, seven requests of two items each (team ``new`` and ``old``).

    u1: r1 click on new's item (win), r2 click on old's (loss), r3 clicks on both (tie);
    u2: r4 click and purchase on new's item (win), r5 click on new's item and one on
        an item no team showed (win; 1 uncredited click);
    u3: r6 no click, r7 click and purchase on old's item (loss).
    First picks (the position-1 team): new in r1 r3 r5 r6, old in r2 r4 r7.
    """
    rows = []
    shown = {  # request: (user, [(item, team) by position], clicked items, bought items)
        "r1": ("u1", [("i1", "new"), ("i2", "old")], ["i1"], []),
        "r2": ("u1", [("i3", "old"), ("i4", "new")], ["i3"], []),
        "r3": ("u1", [("i5", "new"), ("i6", "old")], ["i5", "i6"], []),
        "r4": ("u2", [("i1", "old"), ("i2", "new")], ["i2"], ["i2"]),
        "r5": ("u2", [("i3", "new"), ("i4", "old")], ["i3", "i9"], []),
        "r6": ("u3", [("i1", "new"), ("i2", "old")], [], []),
        "r7": ("u3", [("i5", "old"), ("i6", "new")], ["i5"], ["i5"]),
    }
    for user in ("u1", "u2", "u3"):
        rows.append(f"il,interleaved,{user},2024-05-01T09:00:00Z,exposure,,,,,")
    for n, (request, (user, items, clicked, bought)) in enumerate(shown.items()):
        ts = f"2024-05-01T{10 + n:02d}:00:00Z"
        for position, (item, team) in enumerate(items, start=1):
            rows.append(
                f"il,interleaved,{user},{ts},impression,{request},{item},{position},,{team}"
            )
        later = f"2024-05-01T{10 + n:02d}:00:30Z"
        rows += [f"il,interleaved,{user},{later},click,{request},{i},,," for i in clicked]
        rows += [f"il,interleaved,{user},{later},purchase,{request},{i},,9.5," for i in bought]
    return rows


#: Per user (u1, u2, u3): requests won, lost and tied by ``new`` (A), by clicks.
WINS, LOSSES, TIES = [1, 2, 0], [1, 0, 1], [1, 0, 0]


def clustered(wins: list[int], losses: list[int], ties: list[int]) -> tuple[float, float]:
    """Δ_AB and its standard error with users as the unit, from the definition:
    Δ = Σm/Σr − 0 with m_u = (w_u − l_u)/2, r_u = w_u + l_u + t_u, and the
    delta method's linearisation z_u = (m_u − Δ·r_u)/r̄, var(Δ) = s²(z)/n."""
    w, lo, t = (np.array(x, dtype=float) for x in (wins, losses, ties))
    m, r = (w - lo) / 2, w + lo + t
    delta = m.sum() / r.sum()
    z = (m - delta * r) / r.mean()
    return float(delta), float(np.sqrt(z.var(ddof=1) / len(z)))


def _store(tmp_path: Path, db: str | None = None) -> str:
    path = tmp_path / "il.csv"
    path.write_text("\n".join([HEADER, *_rows()]) + "\n")
    db = db or str(tmp_path / "s.duckdb")
    result = run("ingest", str(path), "--db", db)
    assert result.exit_code == 0, result.output
    return db


def _json(db: str, *args: str) -> dict[str, Any]:
    result = run("report", "--experiment", "il", "--db", db, "-f", "json", "-o", "-", *args)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _check_section(doc: dict[str, Any]) -> None:
    s = doc["interleaving"]
    delta, se = clustered(WINS, LOSSES, TIES)
    # (3 wins + 1 tie / 2) / 6 requests − 1/2
    assert delta == pytest.approx((3 + 0.5) / 6 - 0.5)
    assert (s["team_a"], s["team_b"]) == ("new", "old")
    assert (s["wins"], s["losses"], s["ties"], s["requests"], s["users"]) == (3, 2, 1, 6, 3)
    assert s["delta"] == pytest.approx(delta)
    z = 1.959963984540054
    # Δ_AB's range is [−1/2, 1/2]: the upper end, 0.5024, is clipped
    assert delta + z * se > 0.5
    assert s["interval"] == pytest.approx([delta - z * se, 0.5])
    assert s["p_value"] == pytest.approx(math.erfc(abs(delta) / se / math.sqrt(2)))
    # u2 prefers new, u3 old, u1 neither: a share of 1/2, sign test p = 1
    assert (s["preference_share"], s["sign_p_value"]) == (0.5, 1.0)
    assert s["decision"] == "no_preference" and s["preferred"] is None
    # purchases: r4 (new's item, a win of u2), r7 (old's item, a loss of u3)
    p = s["by_purchases"]
    assert (p["wins"], p["losses"], p["ties"], p["users"]) == (1, 1, 0, 2)
    assert p["delta"] == 0.0
    # 4 first picks of 7 for new: P(X ≤ 3) = 1/2 for Binomial(7, 1/2), so p = 1
    balance = s["balance"]
    assert balance["first_picks"] == {"new": 4, "old": 3}
    assert balance["share_a"] == pytest.approx(4 / 7)
    assert balance["p_value"] == pytest.approx(1.0) and not balance["flagged"]
    assert s["uncredited_clicks"] == 1


def test_json_section_from_hand_counts(tmp_path: Path) -> None:
    import jsonschema

    doc = _json(_store(tmp_path))
    _check_section(doc)
    # the shape issue 33 fixes: the click-credited numbers at the top level
    assert set(doc["interleaving"]) == {
        *("status", "message", "team_a", "team_b", "delta", "interval", "p_value"),
        *("wins", "losses", "ties", "users", "requests", "preference_share"),
        *("sign_p_value", "decision", "preferred", "by_purchases", "balance"),
        "uncredited_clicks",
    }
    root = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
    schema = json.loads((root / "reports" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["schema_version"] == "2.2"
    assert doc["metrics"] == [] and doc["decisions"] == [] and doc["verdicts"] == []


def test_control_names_the_baseline_team(tmp_path: Path) -> None:
    """--control new makes new the baseline B: Δ_AB changes sign."""
    db = _store(tmp_path)
    s = _json(db, "--control", "new")["interleaving"]
    assert (s["team_a"], s["team_b"]) == ("old", "new")
    assert s["delta"] == pytest.approx(-((3 + 0.5) / 6 - 0.5))
    assert (s["wins"], s["losses"]) == (2, 3)
    assert s["balance"]["first_picks"] == {"old": 3, "new": 4}


def test_control_that_is_no_team_is_a_usage_error(tmp_path: Path) -> None:
    result = run("report", "--experiment", "il", "--db", _store(tmp_path), "--control", "x")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == (
        "Error: --control 'x': experiment 'il' is interleaved: name one of its teams "
        "(new, old) as the baseline"
    )


def test_text_says_interleaved_and_prints_no_ab_section(tmp_path: Path) -> None:
    result = run("report", "--experiment", "il", "--db", _store(tmp_path), "-f", "text", "-o", "-")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    delta, se = clustered(WINS, LOSSES, TIES)
    low, high = delta - 1.959963984540054 * se, min(0.5, delta + 1.959963984540054 * se)
    assert lines[2] == "rankers new (A) and old (B, the baseline); unit user; confidence 95%"
    assert lines[4].startswith(
        "DECISION NO PREFERENCE: the interval of Δ_AB includes 0, so neither ranker is "
        f"preferred (Δ_AB = +0.0833 [{low:+.4f}, {high:+.4f}], p = "
    )
    assert lines[6].startswith(
        "Interleaved experiment: every user saw lists merged from new and old"
    )
    clicks = next(line for line in lines if line.lstrip().startswith("clicks"))
    assert clicks.split() == [
        "clicks", "+0.0833", f"[{low:+.4f},", f"{high:+.4f}]", clicks.split()[4],
        "3", "2", "1", "6", "3",
    ]  # fmt: skip
    assert (
        "first picks: new 4, old 3 (57.1% new; binomial p = 1.0000, ok); "
        "clicks no team is credited with: 1"
    ) in lines
    for ab in ("VERDICT", "Primary metrics", "sample ratio", "Power", "Error"):
        assert not any(ab in line for line in lines), ab


def test_html_section(tmp_path: Path) -> None:
    from html_tree import parse

    out = tmp_path / "il.html"
    result = run("report", "--experiment", "il", "--db", _store(tmp_path), "-o", str(out))
    assert result.exit_code == 0, result.output
    page = parse(out.read_text())
    row = page.find("tr", data_credit="clicks")
    assert row.find(data_field="delta").text() == "+0.0833"
    assert [
        r.find(data_field="delta").text() for r in page.find_all("tr", data_credit="purchases")
    ] == ["0.0000"]
    assert page.find(data_decision="no_preference").text().strip().startswith("NO PREFERENCE")
    assert page.find_all(id="decision") == []  # no A/B verdicts section
    assert "new 4, old 3" in page.find(data_field="balance").text()


def test_api_report_and_frame(tmp_path: Path) -> None:
    import abeval

    with abeval.open(_store(tmp_path), read_only=True) as store:
        report = store.report("il")
    assert report.interleaving is not None
    assert report.interleaving.clicks.wins == 3
    rows = report.rows()
    assert [r["credit"] for r in rows] == ["click", "purchase"]
    assert rows[0]["delta"] == pytest.approx(1 / 12)
    assert repr(report).startswith(
        "<ExperimentReport 'il': interleaved, the interval of Δ_AB includes 0, so neither ranker "
        "is preferred (Δ_AB +0.0833 ["
    )


@pytest.mark.postgres
def test_postgres_gives_the_same_section(tmp_path: Path, postgres_database: str) -> None:
    _check_section(_json(_store(tmp_path, postgres_database)))


def test_imbalanced_first_picks_are_flagged() -> None:
    """30 of 100 first picks: the exact two-sided binomial p = 2·P(X ≤ 30) < 0.001."""
    from abeval.analysis.interleaving import balance_of, section_of
    from abeval.report.interleaving_text import interleaving_lines
    from abeval.stats.interleaving import InterleavingStats, compare_interleaved

    b = balance_of({"new": 30, "old": 70}, "new", "old")
    expected = 2 * sum(math.comb(100, k) for k in range(31)) / 2**100
    assert b.p_value == pytest.approx(expected, rel=1e-9)
    assert b.flagged and b.share_a == 0.3
    clicks = compare_interleaved(InterleavingStats.from_users(WINS, LOSSES, TIES))
    lines = interleaving_lines(section_of(clicks, None, b, 0, "new", "old"))
    assert lines[2] == (
        "!! First picks are imbalanced (p < 0.0001): team draft's coin should give each team "
        "half of them; check how the lists were merged."
    )
    assert (
        "first picks: new 30, old 70 (30.0% new; binomial p < 0.0001, IMBALANCED); "
        in (lines[-2][:75])
    )


def test_three_teams_in_the_store_are_an_error() -> None:
    from abeval.analysis.interleaving import choose_teams
    from abeval.errors import AbevalError

    with pytest.raises(AbevalError) as caught:
        choose_teams(["a", "b", "c"], None, "il")
    assert str(caught.value) == (
        "experiment 'il' is interleaved but its impressions name 3 teams (a, b, c); an "
        "interleaved comparison needs exactly two: check the team column of the events"
    )


def test_power_of_an_interleaved_experiment(tmp_path: Path) -> None:
    """Users for Δ_AB = 0.1: (z₀.₉₇₅ + z₀.₈)² · n·se² / Δ², every user having a
    decided request (3 of 3), se from the numpy re-derivation above."""
    db = _store(tmp_path)
    _, se = clustered(WINS, LOSSES, TIES)
    z = 1.959963984540054 + 0.8416212335729143
    needed = math.ceil(z * z * 3 * se * se / 0.1**2)
    args = ("power", "--experiment", "il", "--db", db, "--delta", "0.1", "--mde", "0.05")
    result = run(*args, "-f", "json")
    assert result.exit_code == 0, result.output
    (plan,) = json.loads(result.stdout)
    assert (plan["users"], plan["decided_share"], plan["users_needed"]) == (3, 1.0, needed)
    assert plan["detectable_now"] == pytest.approx(z * se)
    assert plan["ratio"] == pytest.approx(plan["ab_users"] / needed)
    text = run(*args).stdout.splitlines()
    assert text[2] == f"  a preference of Δ_AB = ±0.1000 needs {needed:,} users"
    bad = run("power", "--experiment", "il", "--db", db, "--delta", "0.7")
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "Error: --delta 0.7: a preference Δ_AB is between 0 and 0.5"


@pytest.mark.slow
def test_users_needed_give_the_power_asked_in_simulation() -> None:
    """The users :func:`interleaving_users` plans from a 200,000-user pilot (Δ_AB
    within about 3% of the truth) detect the preference in about 80% of 300 fresh
    simulations (binomial sd 2.3%; measured 79.5% over 600)."""
    from abeval.simulate.config import SimulationConfig
    from abeval.simulate.interleaved import interleaved_requests
    from abeval.stats.interleaving import (
        InterleavingStats,
        compare_interleaved,
        interleaving_users,
    )

    pilot_config = SimulationConfig(users=200_000, seed=11, true_ctr_lift={"treatment": 0.05})
    pilot = InterleavingStats.from_users(*interleaved_requests(pilot_config).per_user())
    share = pilot.users / 200_000
    needed = interleaving_users(pilot.per_user.mean, pilot.per_user.variance, share)
    assert needed is not None
    n = math.ceil(needed)
    config = SimulationConfig(users=n, true_ctr_lift={"treatment": 0.05})
    detected = 0
    for seed in range(300):
        run_ = interleaved_requests(config, seed=1_000 + seed)
        p = compare_interleaved(InterleavingStats.from_users(*run_.per_user())).p_value
        detected += p is not None and p < 0.05
    assert 0.73 <= detected / 300 <= 0.87, (n, detected)
