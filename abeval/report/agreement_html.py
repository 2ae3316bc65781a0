"""The agreement board as one self-contained HTML page (``abeval agreement``, the
default format): first the board's answer per online metric in words, then per
primary online metric the signals ranked by how well they predict its lift
(ranking column first, each row tagged with its source), a table of their
statistics, a glossary and, per signal, a scatter of the
offline against the online lift with both intervals as crosshairs and the
diagonal. Same page shell, stylesheet and filters as the experiment report
(``reports/agreement.html.j2`` extends ``base.html.j2``); no JavaScript, nothing
fetched. Nothing here computes a statistic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from abeval.analysis.agreement import AgreementBoard, AgreementPair, SignalSummary
from abeval.report.agreement_charts import Scatter, ScatterInput, scatter
from abeval.report.agreement_text import (
    ORDERED_BY,
    RANK_COLUMN,
    ceiling_text,
    coefficient_interval,
    sign_text,
    signal_name,
    source_label,
)
from abeval.report.agreement_words import (
    GLOSSARY,
    SOURCE_TAGS,
    HeadlineWords,
    headline_words,
    ratio_text,
)
from abeval.report.templates import environment
from abeval.report.words import store_shown
from abeval.stats.forecast import MIN_EXPERIMENTS

TEMPLATE = "agreement.html.j2"
DEFAULT_PATH = Path("reports") / "agreement.html"

SOURCE_WORDS = {
    "evaluation": "recorded evaluation",
    "ope": "off-policy estimate",
    "replay": "replayed from the same clicks",
    "history": "from the history file",
}
POST_HOC_WORDS = "post-hoc off-policy estimate (the treatment's own impressions)"


@dataclass(frozen=True)
class SignalCard:
    """One signal against one online metric: its summary, the words of its source,
    its ``key`` (an id for the page), its scatter and the texts the table shows."""

    summary: SignalSummary
    key: str
    name: str
    source_label: str
    source_words: str
    scatter: Scatter | None
    sign: str
    spearman_ci: str
    slope_ci: str
    model_slope_ci: str
    ceiling: str
    #: ρ / ceiling, ``≥ 1`` at the noise ceiling (:func:`ratio_text`)
    ratio: str


@dataclass(frozen=True)
class MetricBlock:
    """The ranked signals of one primary online metric."""

    metric: str
    label: str
    cards: tuple[SignalCard, ...]


@dataclass(frozen=True)
class AgreementContext:
    """What ``agreement.html.j2`` reads: the board and the blocks built from it."""

    title: str
    version: str
    board: AgreementBoard
    level: str
    blocks: tuple[MetricBlock, ...]
    #: The board's answer per online metric, in sentences.
    headlines: tuple[HeadlineWords, ...]
    #: (term, meaning): the glossary block and the columns' tooltips.
    glossary: dict[str, str]
    rank_column: str
    #: source -> the tag a row shows (``ope`` -> ``off-policy``).
    source_tags: dict[str, str]
    has_replay: bool
    ordered_by: str
    min_history: int


def _pairs(board: AgreementBoard, s: SignalSummary) -> list[AgreementPair]:
    key = (s.signal, s.source, s.online_metric, s.independent)
    return [p for p in board.pairs if (p.signal, p.source, p.online_metric, p.independent) == key]


def _card(board: AgreementBoard, s: SignalSummary, index: int) -> SignalCard:
    points = [
        ScatterInput(
            label=f"{p.experiment} · {p.arm}",
            x=p.offline_lift,
            y=p.online_lift,
            x_ci=p.offline_ci,
            y_ci=p.online_ci,
        )
        for p in _pairs(board, s)
        if p.offline_lift is not None
    ]
    words = POST_HOC_WORDS if s.source == "ope" and not s.independent else SOURCE_WORDS[s.source]
    what = f"{s.signal} ({words})"
    line = None
    if s.slope is not None and s.intercept is not None:
        line = (s.intercept, s.slope)
    return SignalCard(
        summary=s,
        key=f"signal-{index}",
        name=signal_name(s),
        source_label=source_label(s),
        source_words=words,
        scatter=scatter(points, what, line) if points else None,
        sign=sign_text(s),
        spearman_ci=coefficient_interval(s.spearman_ci),
        slope_ci=coefficient_interval(s.slope_ci),
        model_slope_ci=coefficient_interval(s.model_slope_ci),
        ceiling=ceiling_text(s),
        ratio=ratio_text(s.rho_over_ceiling),
    )


def build_context(board: AgreementBoard) -> AgreementContext:
    """The page's context: one block per online metric, signals in rank order."""
    blocks = []
    index = 0
    for metric in dict.fromkeys(s.online_metric for s in board.summary):
        cards = []
        for s in board.summary:
            if s.online_metric == metric:
                cards.append(_card(board, s, index))
                index += 1
        label = board.catalog.label(metric)
        blocks.append(MetricBlock(metric, label, tuple(cards)))
    return AgreementContext(
        title="Offline signals against online lifts",
        version=board.abeval_version,
        board=board,
        level=f"{1 - board.alpha:.0%}",
        blocks=tuple(blocks),
        headlines=tuple(
            headline_words(h, board.catalog.label(h.online_metric)) for h in board.headlines
        ),
        glossary=dict(GLOSSARY),
        rank_column=RANK_COLUMN,
        source_tags=dict(SOURCE_TAGS),
        has_replay=any(not s.independent for s in board.summary),
        ordered_by=ORDERED_BY.get(board.backtest[0].ordered_by, "") if board.backtest else "",
        min_history=MIN_EXPERIMENTS,
    )


def render_html(board: AgreementBoard, *, show_store: bool = False) -> str:
    """The board as one HTML page; the store named by its kind unless ``show_store``."""
    shown = replace(board, store=store_shown(board.store, show_store))
    return environment().get_template(TEMPLATE).render(ctx=build_context(shown))
