"""A program of experiments: each metric's prior of true effects, every
experiment's shrunken lift, the win rate and the shipped experiments' impact,
overall and per tag (docs/metrics.md#a-program-of-experiments).

The primary metric is the one the win rate and the impact are computed on:
``primary``, else the first metric of the history. A win is a decided
experiment (shipped, rolled_back or abandoned) whose primary lift's two-sided
1 − α interval lies above 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from abeval.analysis.program_history import ProgramEntry
from abeval.errors import InputError
from abeval.stats.program import (
    MIN_EXPERIMENTS,
    Impact,
    Prior,
    Shrunk,
    WinRate,
    fit_prior,
    impact,
    shrink,
    win_rate,
)

DECIDED = ("shipped", "rolled_back", "abandoned")


@dataclass(frozen=True)
class ProgramRow:
    """One experiment's lift on one metric, raw and shrunken."""

    experiment: str
    metric: str
    lift: float
    se: float
    status: str | None
    date: str
    tags: tuple[str, ...]
    shrunk: Shrunk
    significant: bool


@dataclass(frozen=True)
class ProgramStats:
    """The win rate and the impact of the experiments with ``tag`` (all when None)."""

    tag: str | None
    experiments: int
    win_rate: WinRate
    impact: Impact


@dataclass(frozen=True)
class ProgramReport:
    """A program's statistics (module docstring); ``priors`` holds each metric's
    prior in the history's order, the primary's first."""

    source: str
    primary: str
    alpha: float
    experiments: int
    priors: tuple[tuple[str, Prior], ...]
    overall: ProgramStats
    tags: tuple[ProgramStats, ...]
    lifts: tuple[ProgramRow, ...]

    @property
    def prior(self) -> Prior:
        """The primary metric's prior."""
        return self.priors[0][1]


def build_program(
    source: str,
    entries: Sequence[ProgramEntry],
    *,
    primary: str | None = None,
    alpha: float = 0.05,
    min_experiments: int = MIN_EXPERIMENTS,
) -> ProgramReport:
    """The program's statistics from its checked history rows."""
    from scipy.special import ndtri

    metrics = list(dict.fromkeys(e.metric for e in entries))
    if primary is None:
        primary = metrics[0]
    elif primary not in metrics:
        raise InputError(
            f"{source}: no metric {primary!r}; give {{primary}} one of {', '.join(metrics)}",
            parameters=("primary",),
        )
    metrics.remove(primary)
    metrics.insert(0, primary)
    names = list(dict.fromkeys(e.experiment for e in entries))
    if len(names) < 2:
        raise InputError(
            f"{source}: the history holds one experiment ({names[0]}); "
            "give a row for every experiment of the program"
        )
    z = float(ndtri(1 - alpha / 2))
    priors: list[tuple[str, Prior]] = []
    rows: list[ProgramRow] = []
    for metric in metrics:
        of = [e for e in entries if e.metric == metric]
        lifts, ses = [e.lift for e in of], [e.se for e in of]
        prior = fit_prior(lifts, ses, min_experiments=min_experiments)
        priors.append((metric, prior))
        for e, s in zip(of, shrink(prior, lifts, ses, alpha), strict=True):
            significant = e.lift - z * e.se > 0
            rows.append(ProgramRow(e.experiment, metric, e.lift, e.se, e.status, e.date, e.tags,
                                   s, significant))  # fmt: skip
    first = [r for r in rows if r.metric == primary]
    overall = _stats(None, first, priors[0][1], alpha)
    tags = dict.fromkeys(t for r in first for t in r.tags)
    by_tag = tuple(_stats(t, [r for r in first if t in r.tags], priors[0][1], alpha) for t in tags)
    return ProgramReport(source, primary, alpha, len(names), tuple(priors), overall, by_tag,
                         tuple(rows))  # fmt: skip


def _stats(tag: str | None, rows: Sequence[ProgramRow], prior: Prior, alpha: float) -> ProgramStats:
    decided = [r for r in rows if r.status in DECIDED]
    rate = win_rate(sum(r.significant for r in decided), len(decided), alpha)
    shipped = [r.status == "shipped" for r in rows]
    lifts, ses = [r.lift for r in rows], [r.se for r in rows]
    summed = impact(prior, lifts, ses, shipped, alpha)
    return ProgramStats(tag, len(rows), rate, summed)
