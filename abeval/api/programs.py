"""A program of experiments from a history (``abeval program --history FILE``):
``program``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.api.options import keywords_checked, share

if TYPE_CHECKING:
    from abeval.report.program_json import ShownProgram


@keywords_checked
def program(
    history: str | Path | Any, *, primary: str | None = None, alpha: float = 0.05
) -> ShownProgram:
    """The statistics of a program of experiments, as ``abeval program --history``:
    ``history`` is a CSV or Parquet file, a pandas DataFrame or an Arrow table with
    the columns ``experiment``, ``metric``, ``lift``, ``se`` (optional ``status``,
    ``date``, ``tag``). Each metric's prior of true effects by empirical Bayes,
    every experiment's shrunken lift and interval, and on the ``primary`` metric
    (default: the history's first) the win rate and the shipped experiments'
    impact, raw and de-biased, overall and per tag (docs/metrics.md#a-program-of-experiments).

    >>> result = abeval.program(history="docs/examples/program.csv")
    >>> result.overall.impact.raw, result.overall.impact.debiased
    >>> result.to_frame()[["experiment", "lift", "shrunk"]]
    """
    share("alpha", alpha)
    from abeval.analysis.program import build_program
    from abeval.analysis.program_history import read_program
    from abeval.report.program_json import ShownProgram

    name, entries = read_program(history)
    return ShownProgram.of(build_program(name, entries, primary=primary, alpha=alpha))
