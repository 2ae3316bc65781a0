"""The forecast as one self-contained HTML page (``abeval forecast --format
html``; ``reports/forecast.html.j2`` extends ``base.html.j2``): per online
metric, the forecast, what it learned from and the test it needs. The lines
are the text presenter's, so both say the same. Nothing here computes a
statistic."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from abeval.analysis.forecast import ForecastReport, MetricForecast
from abeval.report.forecast_text import learned_line, test_line
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


@dataclass(frozen=True)
class ForecastContext:
    """What ``forecast.html.j2`` reads."""

    title: str
    version: str
    report: ForecastReport
    level: str
    cards: tuple[ForecastCard, ...]


def build_context(report: ForecastReport) -> ForecastContext:
    cards = []
    for m in report.forecasts:
        label = report.catalog.label(m.metric)
        cards.append(ForecastCard(m, label, learned_line(m), test_line(m)))
    return ForecastContext(
        title="Forecast of the candidate's online lift",
        version=report.abeval_version,
        report=report,
        level=f"{1 - report.alpha:.0%}",
        cards=tuple(cards),
    )


def render_html(report: ForecastReport, *, show_store: bool = False) -> str:
    """The forecast as one HTML page; a history read from the store names the store
    by its kind unless ``show_store``."""
    shown = replace(report, history=history_shown(report.history, show_store))
    return environment().get_template(TEMPLATE).render(ctx=build_context(shown))
