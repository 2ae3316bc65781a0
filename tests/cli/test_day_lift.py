"""The over-time section's lift of each day's activity alone beside the cumulative
one (issue 24, item 5): a novelty effect shows as a day lift that decays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from abeval.cli import app

runner = CliRunner()
DAYS = 4


def _novelty_log(path: Path, seed: int = 3) -> dict[tuple[str, int], dict[str, int]]:
    """Users enrol on one of the first days; each day a user clicks Poisson(rate)
    times, the treatment's rate +60% on its users' first day, +0% after. Returns
    the clicks per (arm, day) per user, for the expected values."""
    rng = np.random.default_rng(seed)
    lines = ["experiment,arm,user_id,ts,event_type,request_id,item_id,position"]
    clicks: dict[tuple[str, int], dict[str, int]] = {}
    request = 0
    for arm in ("control", "treatment"):
        for u in range(300):
            user = f"{arm[0]}{u}"
            start = int(rng.integers(0, 2))
            lines.append(f"n,{arm},{user},2025-03-0{1 + start}T07:00:00Z,exposure,,,")
            for day in range(start, DAYS):
                fresh = arm == "treatment" and day == start
                n = int(rng.poisson(1.6 if fresh else 1.0))
                clicks.setdefault((arm, day), {})[user] = n
                for k in range(n):
                    request += 1
                    ts = f"2025-03-0{1 + day}T08:{k:02d}:00Z"
                    lines.append(f"n,{arm},{user},{ts},impression,r{request},i{k},1")
                    lines.append(f"n,{arm},{user},{ts},click,r{request},i{k},")
    path.write_text("\n".join(lines) + "\n")
    return clicks


def test_the_day_lift_is_each_days_clicks_alone_and_shows_the_novelty(tmp_path: Path) -> None:
    clicks = _novelty_log(tmp_path / "n.csv")
    db = str(tmp_path / "n.duckdb")
    assert runner.invoke(app, ["ingest", str(tmp_path / "n.csv"), "--db", db]).exit_code == 0
    args = ["report", "-e", "n", "--db", db, "--control", "control", "--no-offline"]
    result = runner.invoke(app, [*args, "--primary", "clicks_per_user", "--format", "json"])
    assert result.exit_code == 0, result.output
    points = {p["day"]: p for p in json.loads(result.stdout)["daily"]}
    assert sorted(points) == [f"2025-03-0{d + 1}" for d in range(DAYS)]
    day_lifts = []
    for day in range(DAYS):
        p = points[f"2025-03-0{day + 1}"]
        t, c = clicks[("treatment", day)], clicks[("control", day)]
        expected = np.mean(list(t.values())) / np.mean(list(c.values())) - 1
        assert p["day_lift"] == np.float64(expected) or abs(p["day_lift"] - expected) < 1e-12
        assert p["day_ci"][0] < p["day_lift"] < p["day_ci"][1]
        # cumulative: every click of the users enrolled by then, up to that day
        enrolled = {arm: set(clicks[(arm, day)]) for arm in ("treatment", "control")}
        totals = {
            arm: np.mean(
                [sum(clicks.get((arm, d), {}).get(u, 0) for d in range(day + 1)) for u in users]
            )
            for arm, users in enrolled.items()
        }
        assert abs(p["relative_lift"] - (totals["treatment"] / totals["control"] - 1)) < 1e-12
        day_lifts.append(p["day_lift"])
    # the first days carry the novelty (fresh users), the last has none
    assert day_lifts[0] > 0.3 and abs(day_lifts[-1]) < 0.2
    assert points["2025-03-04"]["relative_lift"] > day_lifts[-1] + 0.05

    page = runner.invoke(
        app, [*args, "--primary", "clicks_per_user", "-o", str(tmp_path / "n.html")]
    )
    assert page.exit_code == 0, page.output
    html = (tmp_path / "n.html").read_text()
    assert html.count('data-kind="day"') == 1 and html.count('data-kind="cumulative"') == 1
    assert "each day&#39;s lift" in html or "each day's lift" in html
