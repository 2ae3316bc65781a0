"""What an ingest reports: the :class:`IngestSummary` of one file. (The formats
and error modes it accepts are :mod:`abeval.choices`' ``FileFormat`` and ``OnError``.)"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class IngestSummary:
    """What one file's ingest did. Every row read is counted once:
    ``rows_read = inserted + repeated_in_file + already_stored + conflicts + rejected``.

    ``duplicates`` is ``repeated_in_file + already_stored`` (the rows that were
    copies of a loaded row); ``conflicts`` are rows whose ``event_id`` is used with
    different content (in the file or in the store), kept in ``rejected_rows``
    like the ``rejected`` rows, which failed a check.
    """

    file: str
    format: str
    status: str  # "ok", "partial" (rows skipped) or "failed"
    rows_read: int
    inserted: int
    duplicates: int
    rejected: int
    seconds: float
    ingest_id: int | None = None
    errors: list[str] = field(default_factory=list)
    repeated_in_file: int = 0
    already_stored: int = 0
    conflicts: int = 0
    notes: list[str] = field(default_factory=list)  # what was normalised or looks odd
    warnings: list[str] = field(default_factory=list)  # names that differ only in case
    trimmed_ids: int = 0  # rows with an identifier trimmed
    lowercased_event_types: int = 0  # rows whose event_type was lower-cased
    far_timestamps: int = 0  # rows far from the rest of their experiment in time
    far_timestamp_range: list[str] | None = None  # their first and last timestamp
    #: A compressed file cut short, loaded with ``--on-error skip``: its whole lines
    #: before the cut (the rows read are those); None for a whole file.
    lines_before_cut: int | None = None

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        out["rows_per_second"] = round(self.rows_per_second)
        return out
