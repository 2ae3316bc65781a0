"""A program of experiments as JSON (``abeval program -f json``), and as the API
returns it (:class:`ShownProgram`: ``to_dict()``, ``to_frame()``).

The document: a top-level ``program`` object (``experiments``, the count;
``win_rate`` {``value``, ``interval``}; ``impact`` {``metric``, ``shipped``,
``raw``, ``debiased``, ``interval``}; ``prior`` {``kind``, ``mean``, ``sd``, ...};
each metric's prior in ``priors`` and each tag's statistics in ``tags``) and a
list ``experiments``, one object per experiment and metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from abeval.analysis.program import ProgramReport, ProgramStats
from abeval.formatting import interval, pct
from abeval.report import frames
from abeval.report.shown import Shown
from abeval.stats.program import Impact, Prior, WinRate


def _pair(low: float | None, high: float | None) -> list[float] | None:
    return None if low is None or high is None else [low, high]


def win_rate_dict(w: WinRate) -> dict[str, Any]:
    return {
        "value": w.value, "interval": _pair(w.low, w.high), "wins": w.wins,
        "decided": w.decided, "message": w.message,
    }  # fmt: skip


def impact_dict(metric: str, i: Impact) -> dict[str, Any]:
    return {
        "metric": metric, "shipped": i.shipped, "raw": i.raw, "debiased": i.debiased,
        "interval": _pair(i.low, i.high), "message": i.message,
    }  # fmt: skip


def prior_dict(metric: str, p: Prior) -> dict[str, Any]:
    return {"metric": metric, **p.to_dict()}


def _stats(metric: str, s: ProgramStats) -> dict[str, Any]:
    return {
        "experiments": s.experiments,
        "win_rate": win_rate_dict(s.win_rate),
        "impact": impact_dict(metric, s.impact),
    }


def program_document(report: ProgramReport) -> dict[str, Any]:
    """The JSON document of ``report`` (module docstring)."""
    overall = _stats(report.primary, report.overall)
    overall["experiments"] = report.experiments
    return {
        "program": {
            "source": report.source,
            "primary": report.primary,
            "alpha": report.alpha,
            **overall,
            "prior": prior_dict(report.primary, report.prior),
            "priors": [prior_dict(m, p) for m, p in report.priors],
            "tags": [{"tag": s.tag, **_stats(report.primary, s)} for s in report.tags],
        },
        "experiments": [
            {
                "experiment": r.experiment,
                "metric": r.metric,
                "lift": r.lift,
                "se": r.se,
                "status": r.status,
                "shrunk": r.shrunk.mean,
                "shrunk_interval": [r.shrunk.low, r.shrunk.high],
                "null_probability": r.shrunk.null_probability,
                "significant": r.significant,
                "date": r.date or None,
                "tags": list(r.tags),
            }
            for r in report.lifts
        ],
    }


@dataclass(frozen=True, repr=False)
class ShownProgram(Shown, ProgramReport):
    """A ProgramReport as the API returns it: one row per experiment and metric
    in ``to_frame()``.

    >>> abeval.program(history="docs/examples/program.csv").to_frame().head()
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "experiment", "metric", "status", "lift", "shrunk", "shrunk_low", "shrunk_high",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (module docstring).

        >>> abeval.program(history="docs/examples/program.csv").to_dict()["program"]["impact"]
        """
        return program_document(self)

    def rows(self) -> list[frames.Row]:
        """One row per experiment and metric, the interval split in two columns.

        >>> abeval.program(history="docs/examples/program.csv").rows()[0]["shrunk_low"]
        """
        rows = []
        for r in program_document(self)["experiments"]:
            low, high = r.pop("shrunk_interval")
            rows.append({**r, "shrunk_low": low, "shrunk_high": high})
        return rows

    def headline(self) -> str:
        """The ``repr``'s first line: the count and the primary metric's impact.

        >>> abeval.program(history="docs/examples/program.csv").headline()
        """
        i = self.overall.impact
        return (
            f"ProgramReport: {self.experiments} experiments; {self.primary} shipped "
            f"{pct(i.raw)} raw, {pct(i.debiased)} de-biased {interval(_pair(i.low, i.high))}"
        )
