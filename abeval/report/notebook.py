"""Results as a notebook shows them: the API returns each result as a subclass of
its result type (same fields, same ``to_dict()``, equal numbers) that adds

- ``to_frame()``: a pandas DataFrame of the result, its columns named as the JSON
  keys (:mod:`abeval.report.frames`);
- a ``repr`` of a few lines saying what the result is and how to see more;
- ``_repr_html_``: a compact table that Jupyter lays out in its own styles.

The board and the forecast, results across experiments, are shown by
:mod:`abeval.report.notebook_across`, so that a report loads neither.

>>> import abeval
>>> with abeval.open("demo/demo.duckdb", read_only=True) as store:  # doctest: +SKIP
...     report = store.report("home-reco-v2")
>>> report  # doctest: +SKIP
<ExperimentReport 'home-reco-v2': ship (CTR +7.26% [+2.87%, +11.8%]); 7 metrics × 1 arm ...>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from abeval.analysis.report_model import ExperimentReport
from abeval.formatting import NA, interval, pct, signed, signed_interval
from abeval.report import frames
from abeval.report.shown import Shown, span
from abeval.report.words import said as said_word


@dataclass(frozen=True, repr=False)
class ShownReport(Shown, ExperimentReport):
    """An ExperimentReport (same fields, same ``to_dict()``): one row per metric ×
    arm in ``to_frame()``, a compact table in Jupyter.

    >>> store.report("home-reco-v2").to_frame().query("role == 'primary'")
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "metric",
        "role",
        "arm",
        "control.value",
        "treatment.value",
        "relative_effect",
        "interval",
        "p_adjusted",
        "chance_to_win",
        "direction",
    )

    #: The compact table of an interleaved experiment: one row per credit.
    INTERLEAVED: ClassVar[tuple[str, ...]] = (
        "credit",
        "team_a",
        "team_b",
        "delta",
        "interval",
        "p_value",
        "wins",
        "losses",
        "ties",
        "users",
    )

    def rows(self) -> list[frames.Row]:
        if self.interleaving is not None:
            return frames.interleaving_rows(self.interleaving.to_dict())
        return frames.report_rows(self.to_dict())

    def columns(self) -> tuple[str, ...]:
        return self.SHOWN if self.interleaving is None else self.INTERLEAVED

    def headline(self) -> str:
        s = self.interleaving
        if s is not None:
            preferred = f"{s.preferred} preferred" if s.preferred else said_word(s.decision)
            return (
                f"ExperimentReport {self.experiment!r}: interleaved, {preferred} "
                f"(Δ_AB {signed(s.delta)} {signed_interval(s.interval)})"
            )
        arms = {m.arm for m in self.metrics}
        metrics = {m.metric for m in self.metrics}
        said = []
        for d in self.decisions:
            first = d.primaries[0] if d.primaries else None
            lift = (
                ""
                if first is None
                else f" ({self.catalog.label(first.metric)} {pct(first.relative_effect)} "
                f"{interval(first.interval)})"
            )
            said.append(f"{d.arm}: {d.decision}{lift}")
        return (
            f"ExperimentReport {self.experiment!r}: {'; '.join(said) or 'no decision'}; "
            f"{len(metrics)} metrics × {len(arms)} treatment arm{'s' if len(arms) != 1 else ''}"
        )

    def shown_cells(self, row: frames.Row) -> list[Any]:
        """A metric and arm: the relative effect and the interval the decision reads
        as percentages, the chance to beat control as a share.

        >>> report.shown_cells(report.rows()[0])[:2]
        ['ctr', 'primary']
        """
        if self.interleaving is not None:
            low, high = row["interval_low"], row["interval_high"]
            cells = {"interval": signed_interval(span(low, high)), "delta": signed(row["delta"])}
            return [cells.get(c, row.get(c)) for c in self.INTERLEAVED]
        chance = row["chance_to_win"]
        shown = {
            "interval": interval(span(row["interval_low"], row["interval_high"])),
            "relative_effect": pct(row["relative_effect"]),
            "chance_to_win": NA if chance is None else f"{chance:.0%}",
        }
        return [shown.get(c, row.get(c)) for c in self.SHOWN]
