"""Kept summaries of many experiments, read at once (issue 32 item 1): what the
agreement board's sessions would each ask the store for, in three statements for
the whole store instead of three or four per experiment: every experiment's row
of ``experiments``, every recorded target file, and every kept part of the parts
asked for. A session given a :class:`Prefetched` reads its row, digests and parts
from it and opens no connection unless a part must be computed
(:class:`~abeval.analysis.session.ExperimentSession`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval.store.experiment_facts import ExperimentRow, read_rows
from abeval.store.kept import read_all_kept
from abeval.store.ope_target import RecordedTargets, recorded_all

if TYPE_CHECKING:
    from abeval.store.database import Database


@dataclass(frozen=True)
class Prefetched:
    """Every experiment's row (``rows``) and recorded target file (``targets``),
    and the kept texts of the parts read, by (experiment, options key, depends)
    → part → text: what is not there is not kept."""

    rows: Mapping[str, ExperimentRow]
    targets: Mapping[str, RecordedTargets]
    kept: Mapping[tuple[str, str, str], Mapping[str, str]]


def prefetch(store: Database, parts: Sequence[str]) -> Prefetched | None:
    """What the sessions of the store's experiments read before their parts, and
    the kept ``parts``, on one connection; None on a store that keeps nothing
    (Spark), whose sessions read their facts themselves."""
    if not store.backend.runs_migrations:
        return None
    with store.connect() as conn:
        return Prefetched(read_rows(conn), recorded_all(conn), read_all_kept(conn, parts))
