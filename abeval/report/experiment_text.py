"""What ``abeval experiment show`` prints after the settings: what was decided,
the target probabilities recorded and the evaluations recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.formatting import when
from abeval.report.words import said

if TYPE_CHECKING:
    from abeval.analysis.experiment_record import ExperimentRecord


def status_text(status: str | None, decided_on: str | None) -> str:
    """``shipped on 2026-03-20``; ``not recorded`` when no status is."""
    if status is None:
        return "not recorded"
    return said(status) + (f" on {decided_on}" if decided_on else "")


def record_lines(record: ExperimentRecord) -> list[str]:
    """One line per part of what was decided that is recorded, then the target
    probabilities and the evaluations (or that none are recorded)."""
    o, t = record.outcome, record.targets
    lines = [f"  status: {status_text(o.status, o.decided_on)}"]
    if o.owner:
        lines.append(f"  owner: {o.owner}")
    if o.hypothesis:
        lines.append(f"  hypothesis: {o.hypothesis}")
    if o.tags:
        lines.append(f"  tags: {', '.join(o.tags)}")
    if t is None:
        lines.append("  target probabilities: none recorded")
    else:
        lines.append(
            f"  target probabilities: {t.file} ({t.rows:,} rows, sha256 {t.checksum[:12]}, "
            f"recorded {when(t.recorded_at.isoformat())})"
        )
    if not record.evaluations:
        lines.append("  evaluations: none recorded")
    for e in record.evaluations:
        lines.append(
            f"  evaluation {e.evaluation_id}, recorded {when(e.recorded_at.isoformat())}: "
            f"{', '.join(e.arms)}; {_metrics(e.metrics)}"
        )
    return lines


def _metrics(names: tuple[str, ...], shown: int = 4) -> str:
    """``12 metrics: ap@10, ap@5, coverage@10, hit_rate@10 ...``"""
    head = ", ".join(names[:shown]) + (" ..." if len(names) > shown else "")
    return f"{len(names)} metric{'' if len(names) == 1 else 's'}: {head}"
