"""What every result adds when the API returns it (:mod:`abeval.report.notebook`):
``to_frame()``, a ``repr`` of two lines and a compact HTML table for Jupyter.

>>> cell(0.123456), cell(None), cell(True)
('0.1235', 'n/a', 'yes')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any, ClassVar, Self

from abeval.formatting import NA, number
from abeval.report import frames

MORE = ".to_frame(), .to_dict(), abeval.render.text(...), abeval.render.html(...)"


class Shown:
    """What every shown result adds: ``of``, the compact ``repr`` and HTML table.

    >>> report = store.report("home-reco-v2")
    >>> report                 # two lines: the decision, and how to see more
    >>> report.to_frame()      # a DataFrame
    """

    #: The columns of the compact HTML table (a subset of the frame's).
    SHOWN: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def of(cls, result: Any) -> Self:
        """``result`` (of the type this one derives from) as shown in a notebook.

        >>> ShownReport.of(build_report(engine, "home-reco-v2", options, catalog))
        """
        return cls(**{f.name: getattr(result, f.name) for f in fields(result)})

    def rows(self) -> list[frames.Row]:
        """The frame's rows (:mod:`abeval.report.frames`).

        >>> store.report("home-reco-v2").rows()[0]["metric"]
        'ctr'
        """
        raise NotImplementedError

    def to_frame(self) -> Any:
        """The result as a pandas DataFrame, columns named as the JSON keys
        (``pip install 'abeval[pandas]'``).

        >>> store.agreement().to_frame().sort_values("spearman", ascending=False).head()
        """
        return frames.frame(self.rows())

    def headline(self) -> str:
        """The first line of the ``repr``, without its angle brackets.

        >>> store.forecast(evidence).headline()
        'ForecastReport: ctr +3.34% [-0.55%, +7.23%] from snips'
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.headline()}\n — {MORE}>"

    def _repr_html_(self) -> str:
        """The compact table Jupyter shows: a few columns of :meth:`to_frame`."""
        from abeval.report.templates import environment

        rows = [[cell(c) for c in self.shown_cells(r)] for r in self.rows()]
        return (
            environment()
            .get_template("table.html.j2")
            .render(title=self.headline(), columns=self.columns(), rows=rows, more=f"More: {MORE}")
        )

    def columns(self) -> tuple[str, ...]:
        """The compact table's columns: :data:`SHOWN` unless the result says otherwise
        (an interleaved experiment's report: one row per credit).

        >>> store.report("home-reco-v2").columns()[:3]
        ('metric', 'role', 'arm')
        """
        return self.SHOWN

    def shown_cells(self, row: frames.Row) -> list[Any]:
        """The values of the table's columns (:meth:`columns`) in one row of the frame.

        >>> board.shown_cells(board.rows()[0])[:2]
        [1, 'snips']
        """
        return [row.get(c) for c in self.columns()]


def cell(value: Any) -> str:
    if value is None:
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)
    return str(value)


def span(low: Any, high: Any) -> Sequence[float] | None:
    return None if low is None or high is None else (low, high)
