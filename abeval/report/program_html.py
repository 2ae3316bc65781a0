"""The program of a store's experiments as one self-contained HTML page
(``abeval program -f html``; ``reports/program.html.j2`` extends
``base.html.j2``): the program's statistics in words (the text presenter's
lines), then one row per experiment (dates, users, owner and tags, status,
the report's decision, the primary lift and its interval under the decision's
basis, the shrunken lift, guardrails, agreement, a link to its report when
written). Nothing here computes a statistic.

The template reads one object, ``ctx`` (:class:`ProgramContext`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from abeval.analysis.program_store import StoredExperiment, StoreProgram
from abeval.formatting import NA, interval, pct
from abeval.report.experiment_text import status_text
from abeval.report.html import _VERDICT_TONES
from abeval.report.program_store import (
    agreement_parts,
    decision_words,
    guardrail_words,
    run_cells,
)
from abeval.report.program_text import prior_line, stats_lines
from abeval.report.templates import environment
from abeval.report.words import store_shown

TEMPLATE = "program.html.j2"
DEFAULT_PATH = Path("reports") / "program.html"


@dataclass(frozen=True)
class RunRow:
    """An interleaved run linked to an experiment, as the line under its row shows it."""

    experiment: str
    link: str | None
    preference: str
    users: str
    delta: str
    interval: str


@dataclass(frozen=True)
class ProgramRow:
    """One experiment's cells, as the page shows them."""

    row: StoredExperiment
    link: str | None
    status: str
    decision: str
    tone: str
    users: str
    lift: str
    interval: str
    basis: str
    shrunk: str
    shrunk_interval: str
    guardrails: str
    #: The off-policy estimate's and the prediction's agreement, one text each.
    agreement: tuple[str, ...]
    #: The interleaved runs linked to this A/B test, each on a line under its row.
    runs: tuple[RunRow, ...] = ()


@dataclass(frozen=True)
class ProgramContext:
    """What ``program.html.j2`` reads."""

    title: str
    version: str
    program: StoreProgram
    store: str
    filters: str
    level: str
    #: The statistics in words: priors, win rate and impact (overall), per tag.
    priors: tuple[str, ...]
    overall: tuple[str, ...]
    tags: tuple[tuple[str, tuple[str, ...]], ...]
    rows: tuple[ProgramRow, ...]


def _link(page: str | None, links_from: Path | None) -> str | None:
    if page is None:
        return None
    if links_from is None:
        return Path(page).as_posix()
    return Path(os.path.relpath(page, links_from)).as_posix()


def build_context(
    p: StoreProgram, *, show_store: bool = False, links_from: Path | None = None
) -> ProgramContext:
    """The page's context; report links relative to ``links_from`` (the page's folder)."""
    from abeval import __version__

    shrunk = {r.experiment: r.shrunk for r in p.lifts if r.metric == p.primary}
    pages = dict(p.pages)
    rows = []
    for r in p.stored:
        shown = r.lift(p.primary)
        post = shrunk.get(r.experiment)
        runs = tuple(
            RunRow(x.experiment, _link(pages.get(x.experiment), links_from), *run_cells(x))
            for x in r.interleaved
            if x.experiment != r.experiment
        )
        row = ProgramRow(
            row=r,
            link=_link(pages.get(r.experiment), links_from),
            status=status_text(r.outcome.status, None),
            decision=decision_words(r.decision),
            tone=_VERDICT_TONES.get(r.decision or "", "neutral"),
            users=f"{r.users:,}" if r.users is not None else NA,
            lift=pct(shown.lift) if shown else NA,
            interval=interval(shown.interval) if shown else NA,
            basis=shown.basis.replace("_", " ") if shown else "",
            shrunk=pct(post.mean) if post else NA,
            shrunk_interval=interval((post.low, post.high)) if post else NA,
            guardrails=guardrail_words(r.guardrails) if r.decision else NA,
            agreement=agreement_parts(r, p.primary),
            runs=runs,
        )
        if r.run is not None:  # an interleaved run of its own: Δ_AB in place of a lift
            preference, users, delta, ci = run_cells(r.run)
            row = replace(row, decision=preference, users=users, lift=delta, interval=ci)
        rows.append(row)
    filters = p.filters.words()
    return ProgramContext(
        title="Program of experiments" + (f": {filters}" if filters else ""),
        version=__version__,
        program=p,
        store=store_shown(p.store, show_store),
        filters=filters,
        level=f"{(1 - p.alpha) * 100:g}%",
        priors=tuple(prior_line(m, prior) for m, prior in p.priors),
        overall=tuple(line for line in stats_lines(p.primary, p.overall)),
        tags=tuple((s.tag or "", tuple(stats_lines(p.primary, s))) for s in p.tags),
        rows=tuple(rows),
    )


def render_html(
    p: StoreProgram, *, show_store: bool = False, links_from: str | Path | None = None
) -> str:
    """The program as one HTML page; the store named by its kind unless
    ``show_store``; links to the reports relative to ``links_from``."""
    folder = Path(links_from) if links_from is not None else None
    context = build_context(p, show_store=show_store, links_from=folder)
    return environment().get_template(TEMPLATE).render(ctx=context)
