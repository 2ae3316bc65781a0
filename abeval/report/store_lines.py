"""The store's lines: a file ingested (``abeval ingest``), the metric catalog
(``abeval metrics``) and the sources read in place with their mappings (``abeval
source list`` and ``add``). :mod:`abeval.render` hands them to the CLI and to
notebooks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.analysis.metric_records import MetricRow
    from abeval.store.ingest import IngestSummary
    from abeval.store.source_mapping import Mapping
    from abeval.store.sources import Source, SourceCheck


def ingest_lines(s: IngestSummary) -> list[str]:
    """An ingested file's summary (every row read counted once), the bad rows kept
    and the notes: what ``abeval ingest`` says on stderr."""
    from abeval.formatting import printable

    lines = [
        f"{printable(s.file)}: {s.rows_read:,} rows read: {s.inserted:,} inserted, "
        f"{s.repeated_in_file:,} repeated in the file, {s.already_stored:,} already in the "
        f"store, {s.conflicts:,} conflicting, {s.rejected:,} rejected "
        f"({s.seconds:.2f} s, {s.rows_per_second:,.0f} rows/s)"
    ]
    kept = s.rejected + s.conflicts
    if kept:
        lines.append(
            f"  {kept:,} bad row{'' if kept == 1 else 's'} kept in rejected_rows "
            f"(ingest {s.ingest_id}); list them with `abeval rejects --ingest {s.ingest_id}`"
        )
    lines += [f"  {printable(note)}" for note in s.notes]
    return lines


def metrics_lines(rows: Sequence[MetricRow]) -> list[str]:
    """The built-in metrics, then the team-defined ones with where and when they
    were recorded, each with its kind and definition (``abeval metrics``)."""
    from abeval.formatting import printable

    lines = []
    width = max(len(r.name) for r in rows)
    for builtin, title in ((True, "built-in"), (False, "recorded (team-defined)")):
        group = [r for r in rows if r.builtin == builtin]
        if not builtin and not group:
            lines.append("recorded: none; define metrics in TOML and run `abeval metrics add FILE`")
            continue
        lines.append(title)
        for r in group:
            better = ", lower is better" if r.lower_is_better else ""
            lines.append(printable(f"  {r.name:<{width}}  {r.kind:<10}  {r.definition}{better}"))
            if not builtin:
                said = f"{r.description}; " if r.description else ""
                when = r.recorded_at.strftime("%Y-%m-%d %H:%M UTC") if r.recorded_at else ""
                lines.append(printable(f"  {'':<{width}}  {'':<10}  {said}from {r.source}, {when}"))
    return lines


def mapping_text(mapping: Mapping) -> str:
    """A source's mapping in one line (``abeval source list``)."""
    return mapping.describe()


def mapping_dict(mapping: Mapping) -> dict[str, Any]:
    """A source's mapping as JSON (``abeval source list -f json``)."""
    data: dict[str, Any] = json.loads(mapping.to_json())
    return data


def sources_lines(sources: Sequence[Source]) -> list[str]:
    """Each source's name and table, and its mapping (``abeval source list``)."""
    from abeval.formatting import printable

    lines = []
    for s in sources:
        lines.append(printable(f"{s.name}  {s.table}"))
        lines.append(printable(f"  {mapping_text(s.mapping)}"))
    return lines


def sources_document(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """The sources as the JSON document ``abeval source list -f json`` writes: each
    one's name, table, mapping and times."""
    return [
        {
            "name": s.name,
            "table": s.table,
            "mapping": mapping_dict(s.mapping),
            "created_at": s.created_at.isoformat(),
            "updated_at": s.updated_at.isoformat(),
        }
        for s in sources
    ]


def source_check_lines(check: SourceCheck, *, replaced: bool = False) -> list[str]:
    """A source added (or ``replaced``): the events of each experiment it holds and
    the rows of event types that map to nothing (``abeval source add``)."""
    from abeval.formatting import counted, printable

    s = check.source
    verb = "replaced" if replaced else "added"
    lines = [printable(f"{verb} source {s.name!r}: {s.table}, read in place")]
    for exp, n in check.events.items():
        kept = " (the store's ingested copy is the one analysed)" if exp in check.in_store else ""
        lines.append(printable(f"  {exp}: {counted(n, 'event')}{kept}"))
    if check.unmapped:
        total = sum(check.unmapped.values())
        values = ", ".join(f"{v} {n:,}" for v, n in list(check.unmapped.items())[:8])
        lines.append(
            printable(
                f"  {counted(total, 'row')} of event types that map to nothing, not analysed: "
                f"{values} (map them with --event-type TYPE=VALUE)"
            )
        )
    return lines
