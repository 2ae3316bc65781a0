"""What a report read in place says of its source (docs/usage.md#tables-read-in-place):
the rows whose event type maps to nothing, counted in health and named in a
problem line, and the source and its mapping in the methodology."""

from __future__ import annotations

import shlex
from dataclasses import replace

from abeval.analysis.report_model import ExperimentReport
from abeval.store.source_mapping import describe_mapping
from abeval.store.sources import InPlace


def with_source(report: ExperimentReport, place: InPlace | None) -> ExperimentReport:
    """``report`` with its source's unmapped rows in health and its mapping in the
    methodology; unchanged when the experiment was ingested."""
    if place is None:
        return report
    source = place.source
    unmapped = sum(place.unmapped.values())
    health = replace(report.health, events_unmapped=unmapped)
    if unmapped:
        values = ", ".join(f"{v} {n:,}" for v, n in list(place.unmapped.items())[:5])
        health = replace(
            health,
            problems=(
                *health.problems,
                f"{unmapped:,} {'event' if unmapped == 1 else 'events'} of source "
                f"{source.name!r} with an event type that maps to nothing ({values}): "
                f"not analysed; map them with "
                f"`abeval source add {shlex.quote(source.name)} --replace "
                "--event-type TYPE=VALUE ...`.",
            ),
        )
    note = (
        f"Events read in place from source {source.name!r} ({source.table}), not copied: "
        f"{describe_mapping(source.mapping)}."
    )
    methodology = replace(report.methodology, notes=(*report.methodology.notes, note))
    return replace(report, health=health, methodology=methodology)
