"""The forecast as one self-contained HTML page (``abeval forecast --format
html``; ``reports/forecast.html.j2`` extends ``base.html.j2``): per online
metric, which signal and why, the go / no-go, the chart (the history, the
forecast's line and band, the candidate), what it learned from and the test it
needs. The lines are the text presenter's, so both say the same. Nothing here
computes a statistic."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from abeval.analysis.forecast import ForecastReport, MetricForecast
from abeval.analysis.forecast_choice import MAX_DAYS
from abeval.report.forecast_chart import ForecastChart, forecast_chart
from abeval.report.forecast_text import (
    VERDICT,
    choice_reason,
    learned_line,
    recommendation_line,
    rule_text,
    test_line,
    traffic_line,
)
from abeval.report.templates import environment
from abeval.report.words import history_shown

TEMPLATE = "forecast.html.j2"
DEFAULT_PATH = Path("reports") / "forecast.html"


@dataclass(frozen=True)
class ForecastCard:
    """One metric's forecast and the sentences the page shows beside it."""

    forecast: MetricForecast
    label: str
    learned: str
    test: str
    choice: str
    verdict: str
    #: The go / no-go line after its verdict.
    go: str
    traffic: str
    chart: ForecastChart | None


@dataclass(frozen=True)
class ForecastContext:
    """What ``forecast.html.j2`` reads."""

    title: str
    version: str
    report: ForecastReport
    level: str
    cards: tuple[ForecastCard, ...]
    rule: str


def build_context(report: ForecastReport) -> ForecastContext:
    cards = []
    max_days = next(
        (m.recommendation.max_days for m in report.forecasts if m.recommendation is not None),
        MAX_DAYS,
    )
    for m in report.forecasts:
        label = report.catalog.label(m.metric)
        r = m.recommendation
        verdict = "" if r is None else VERDICT.get(r.verdict, "")
        go = "" if r is None else recommendation_line(r, report.target_assurance)
        cards.append(
            ForecastCard(
                forecast=m,
                label=label,
                learned=learned_line(m),
                test=test_line(m),
                choice=choice_reason(m),
                verdict=verdict,
                go=go[len(verdict) :],
                traffic="" if m.traffic is None else traffic_line(m.traffic),
                chart=forecast_chart(m, label),
            )
        )
    return ForecastContext(
        title="Forecast of the candidate's online lift",
        version=report.abeval_version,
        report=report,
        level=f"{1 - report.alpha:.0%}",
        cards=tuple(cards),
        rule=rule_text(max_days),
    )


def render_html(report: ForecastReport, *, show_store: bool = False) -> str:
    """The forecast as one HTML page; a history read from the store names the store
    by its kind unless ``show_store``."""
    shown = replace(report, history=history_shown(report.history, show_store))
    return environment().get_template(TEMPLATE).render(ctx=build_context(shown))
