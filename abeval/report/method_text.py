"""How the report's comparisons were made, in words shared by the text and HTML
reports: CUPED named only for the metrics whose comparison used it."""

from __future__ import annotations

from abeval.analysis.report_model import ExperimentReport


def cuped_text(r: ExperimentReport) -> str:
    """``CUPED on a 14-day pre-period for CTR, Conversion``; ``CUPED off``; or, when
    no comparison used it, why (docs/metrics.md#cuped)."""
    days = r.settings.cuped_days
    if not days:
        return "CUPED off"
    used = list(dict.fromkeys(m.label for m in r.metrics if m.comparison.cuped))
    if not used:
        return f"CUPED not used: no metric gained from the {days}-day pre-period"
    return f"CUPED on a {days}-day pre-period for {', '.join(used)}"
