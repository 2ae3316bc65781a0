"""The daily series of abeval.store.sql.online_daily (each day's change per arm, accumulated
over the days) against the per-user values at the end of each day, re-derived here
from the events with numpy."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from abeval.store import open_store
from abeval.store.ingest import ingest_file
from abeval.store.shared_ctes import drop
from abeval.store.sql.online_pass import shared
from abeval.store.sql.online_sums import online_sums
from abeval.store.sql.online_variables import BUILTIN, Moments

START = datetime(2025, 3, 1)
NAMES = ("impressions", "clicks", "purchases", "revenue", "converted")
CAPS = {"clicks": 2.0, "revenue": -0.5}  # a cap below 0: idle users are at -0.5


def _log(path: Path, seed: int = 5) -> list[tuple[str, str, datetime, str, float]]:
    """Users exposed at a random time of one of the first days, with events before
    and after it on random days; one user in both arms, one event in 2031."""
    rng = np.random.default_rng(seed)
    events: list[tuple[str, str, datetime, str, float]] = []
    for u in range(40):
        user, arm = f"u{u}", ("A", "B")[u % 2]
        exposed = START + timedelta(
            days=int(rng.integers(0, 4)), minutes=int(rng.integers(0, 1440))
        )
        events.append((user, arm, exposed, "exposure", 0.0))
        for _ in range(int(rng.integers(0, 12))):
            ts = exposed + timedelta(minutes=int(rng.integers(-3 * 1440, 6 * 1440)))
            kind = str(rng.choice(["impression", "impression", "click", "purchase"]))
            events.append((user, arm, ts, kind, float(rng.integers(1, 90)) / 4))
    events.append(("u1", "A", START, "exposure", 0.0))  # u1 is in B too: left out
    events.append(("u2", "A", datetime(2031, 1, 1), "click", 0.0))  # far outside
    lines = ["experiment,arm,user_id,ts,event_type,request_id,item_id,position,value"]
    for i, (user, arm, ts, kind, value) in enumerate(events):
        keys = ",," if kind == "exposure" else f"r{i},i1,1"
        amount = value if kind == "purchase" else ""
        lines.append(f"x,{arm},{user},{ts.isoformat()},{kind},{keys},{amount}")
    path.write_text("\n".join(lines) + "\n")
    return events


def _expected(events: list[tuple[str, str, datetime, str, float]], own: bool) -> dict:
    arms: dict[str, set[str]] = {}
    for user, arm, *_ in events:
        arms.setdefault(user, set()).add(arm)
    first = {
        u: min(t for uu, _, t, k, _ in events if uu == u and k == "exposure")
        for u, a in arms.items()
        if len(a) == 1
    }
    lo, hi = min(first.values()), max(first.values())
    # days with an event from the first exposure on, not 365 days past the last
    days = sorted({t.date() for _, _, t, _, _ in events if lo <= t < hi + timedelta(days=365)})
    out = {}
    for day in days:
        for arm in ("A", "B"):
            users = [u for u, t in first.items() if next(iter(arms[u])) == arm and t.date() <= day]
            if not users:
                continue
            rows = []
            for u in users:
                mine = [
                    (k, v)
                    for uu, _, t, k, v in events
                    if uu == u
                    and t >= first[u]
                    and t.date() in days
                    and (t.date() == day if own else t.date() <= day)
                ]
                values = {
                    "impressions": sum(k == "impression" for k, _ in mine),
                    "clicks": sum(k == "click" for k, _ in mine),
                    "purchases": sum(k == "purchase" for k, _ in mine),
                    "revenue": sum(v for k, v in mine if k == "purchase"),
                }
                values = {k: min(v, CAPS.get(k, np.inf)) for k, v in values.items()}
                values["converted"] = 1.0 if values["purchases"] > 0 else 0.0
                rows.append([values[n] for n in NAMES])
            out[(day.isoformat(), arm)] = np.array(rows, dtype=float)
    return out


def _check(got: Moments, x: np.ndarray) -> None:
    n = len(x)
    assert got.n == n
    for i, name in enumerate(NAMES):
        assert got.sums[name] == pytest.approx(x[:, i].sum(), rel=1e-9, abs=1e-9)
    cov = np.cov(x, rowvar=False, ddof=1) * (n - 1) if n > 1 else np.zeros((5, 5))
    for i, a in enumerate(NAMES):
        assert got.ss(a) == pytest.approx(cov[i, i], rel=1e-9, abs=1e-9), a
    for (i, a), (j, b) in combinations(enumerate(NAMES), 2):
        assert got.cp(a, b) == pytest.approx(cov[i, j], rel=1e-9, abs=1e-9), (a, b)


def test_both_daily_series_equal_the_per_user_values_of_each_day(tmp_path: Path) -> None:
    events = _log(tmp_path / "x.csv")
    store = open_store(str(tmp_path / "x.duckdb"))
    ingest_file(store, tmp_path / "x.csv")
    with store.connect() as conn:
        base, temporary = shared(conn, "x", 14)
        try:
            sums = online_sums(conn, "x", 14, base, CAPS, BUILTIN)
        finally:
            drop(conn, temporary)
    store.close()
    assert sums.health["events_far_outside"] == 1
    for series, own in ((sums.daily, False), (sums.own_days, True)):
        expected = _expected(events, own)
        got = {(day, arm): m for day, arms in series for arm, m in arms.items()}
        assert sorted(got) == sorted(expected)
        for key, x in expected.items():
            _check(got[key], x)
