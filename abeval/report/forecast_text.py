"""The forecast as terminal text (``abeval forecast``, the default format):
per online metric, the forecast, what it learned from and the test it needs.
Nothing here computes a statistic."""

from __future__ import annotations

from abeval.analysis.forecast import ForecastReport, MetricForecast
from abeval.formatting import count, days_text, fixed, interval, pct, printable, share
from abeval.report.words import said


def tau_range(ci: tuple[float, float] | None) -> str:
    """τ's Q-profile confidence interval, unsigned: ``[0.02%, 1.99%]``."""
    return "n/a" if ci is None else f"{share(ci[0], 2)} to {share(ci[1], 2)}"


def learned_line(m: MetricForecast) -> str:
    """What the model learned: k, the slope with its interval, τ, the carry-over."""
    f = m.fit
    if f.slope is None:
        return f"Learned from {f.k} experiments: {f.message}"
    slope_ci = (
        ""
        if f.slope_interval is None
        else (f" [{fixed(f.slope_interval[0], 2)}, {fixed(f.slope_interval[1], 2)}]")
    )
    return (
        f"Learned from {f.k} experiments: slope {fixed(f.slope, 2)}{slope_ci} "
        f"(about {share(f.slope, 0)} of an offline lift carries over), "
        f"τ {share(f.tau, 2)} (REML; {share(1 - f.alpha, 0)} Q-profile range "
        f"{tau_range(f.tau_interval)})"
    )


def test_line(m: MetricForecast) -> str:
    """The users (and days) a test needs for the target assurance."""
    a = m.assurance
    if a is None:
        return (
            "Test size: unknown (the history gives no test's users; a history file's users column)"
        )
    if a.users is None:
        return f"Test size: {a.message}"
    days = (
        ""
        if m.days is None or m.users_per_day is None
        else (f", {days_text(m.days, m.users_per_day)}")
    )
    return f"Test size: {count(a.users)} users for {share(a.target, 0)} assurance{days}"


def forecast_lines(m: MetricForecast, level: str) -> list[str]:
    p = m.forecast
    head = f"{m.metric}, from {printable(m.signal)}"
    if p.status != "ok":
        return [head, f"  no forecast: {said(p.status, p.message)}"]
    return [
        head,
        f"  offline lift {pct(p.offline_lift)} (se {share(p.offline_se, 2)}) → online lift "
        f"{pct(p.point)}, {level} prediction interval {interval(p.interval)}",
        f"  P(lift > 0) {share(p.p_positive)} · P(lift > {pct(p.mde)}) {share(p.p_above_mde)}",
        f"  {learned_line(m)}",
        *influence_line(m),
        f"  {test_line(m)}",
    ]


def influence_line(m: MetricForecast) -> list[str]:
    """One line when a past experiment is outlying (``Forecast.influence``)."""
    found = m.forecast.influence
    if found is None or not found.flagged or found.point is None:
        return []
    return [
        f"  Outlier: {printable(found.experiment)} measured {pct(found.observed)} where the "
        f"others forecast {pct(found.expected)} (p {found.p_value:.2g}); without it: "
        f"{pct(found.point)}, interval {interval(found.interval)}"
    ]


def render_text(report: ForecastReport) -> str:
    level = f"{1 - report.alpha:.0%}"
    lines = [
        "Forecast of the candidate's true online lift",
        f"  candidate: {printable(report.candidate)}",
        f"  history: {printable(report.history)}",
        "",
    ]
    for m in report.forecasts:
        lines += [*forecast_lines(m, level), ""]
    lines += [f"Note: {printable(n)}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"
