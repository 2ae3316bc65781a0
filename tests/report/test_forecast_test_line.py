"""The forecast's test-size line: days in the planner's words, a year and more not feasible."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from abeval.report import forecast_text
from abeval.stats.assurance import Assurance


def _forecast(users: int, users_per_day: float | None) -> Any:
    a = Assurance(status="ok", message="", target=0.8, alpha=0.05, users=users)
    days = None if users_per_day is None else users / users_per_day
    return SimpleNamespace(assurance=a, days=days, users_per_day=users_per_day)


def test_days_at_traffic_are_rounded_like_the_planner() -> None:
    line = forecast_text.test_line(_forecast(938_704, 20_000.0))
    assert line == (
        "Test size: 938,704 users for 80% assurance, about 46.9 days at 20,000 users per day "
        "(alpha 0.05)"
    )


def test_beyond_a_year_is_not_feasible_and_users_per_day_are_whole() -> None:
    # 33,208 / 72.57 = 457.6 days: more than 365, so the line says so.
    line = forecast_text.test_line(_forecast(33_208, 72.57))
    assert line == (
        "Test size: 33,208 users for 80% assurance, "
        "not feasible at this traffic (458 days at 73 users per day) (alpha 0.05)"
    )


def test_no_traffic_known_gives_users_only() -> None:
    assert (
        forecast_text.test_line(_forecast(1_000, None))
        == "Test size: 1,000 users for 80% assurance (alpha 0.05)"
    )


def test_the_looks_and_the_alpha_are_named() -> None:
    """Under the default basis the line names the α and the daily looks, and when
    the looks counted stop short of the days, how many of them."""
    a = Assurance(status="ok", message="", target=0.8, alpha=0.025, users=280_000, looks=14)
    f = SimpleNamespace(assurance=a, days=14.0, users_per_day=20_000.0)
    assert forecast_text.test_line(f).endswith("(alpha 0.025, 14 daily looks)")  # type: ignore[arg-type]
    capped = Assurance(status="ok", message="", target=0.8, alpha=0.025, users=1_200_000, looks=56)
    g = SimpleNamespace(assurance=capped, days=60.0, users_per_day=20_000.0)
    assert forecast_text.test_line(g).endswith(  # type: ignore[arg-type]
        "(alpha 0.025, the first 56 of 60 daily looks counted)"
    )
