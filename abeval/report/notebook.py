"""The report as a notebook shows it: :class:`ShownReport` is the
:class:`~abeval.analysis.report_model.ExperimentReport` with ``_repr_html_``, so
that Jupyter renders the HTML page ``abeval report`` writes."""

from __future__ import annotations

from dataclasses import dataclass, fields

from abeval.analysis.report_model import ExperimentReport


@dataclass(frozen=True)
class ShownReport(ExperimentReport):
    """An ExperimentReport (same fields, same ``to_dict()``) that Jupyter shows as
    the HTML report."""

    @classmethod
    def of(cls, report: ExperimentReport) -> ShownReport:
        return cls(**{f.name: getattr(report, f.name) for f in fields(report)})

    def _repr_html_(self) -> str:
        """The HTML report page."""
        from abeval.report.html import render_html

        return render_html(self)
