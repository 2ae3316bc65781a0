"""The SQL that reads a file into rows of the events table (typed, checked,
keyed for deduplication), and the DuckDB connection's scratch state around a
load: its settings and the temporary tables the staged load leaves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from abeval.choices import FileFormat as Format
from abeval.store.events_format import (
    KNOWN,
    bad_expression,
    extra_alias,
    extras,
    layered,
    normalised,
)
from abeval.store.ingest.source import Source, open_source
from abeval.store.quoting import quote_literal

EVENT_COLUMNS = (*KNOWN, "attributes", "row_key")
_TEMP_TABLES = (
    "abeval_stage",
    "abeval_check",
    "abeval_lines0",
    "abeval_lines1",
    "abeval_spans",
    "abeval_lines",
    "abeval_rejects",
    "abeval_errors",
    "abeval_conflicts",
    "abeval_request_faults",
    "abeval_reject_errors",
    "abeval_reject_scans",
    "abeval_long_lines",
)


def prepare(
    duck: Any,
    path: Path,
    kind: Format,
    say: Callable[[str], None],
    data: Path | None = None,
    epoch: str | None = None,
) -> Source:
    """Open and check the file's header, and set the connection up for a load.
    ``data`` is the file to read when it is not ``path`` (see :class:`Source`);
    ``epoch`` the declared unit of numeric timestamps."""
    src = replace(open_source(duck, path, kind, data), epoch=epoch)
    say(f"reading {path}")
    drop_rejects(duck)
    # Row order in what is loaded does not matter (the error path re-reads the
    # file in order), and dropping it halves the time DuckDB takes to load.
    duck.execute("SET preserve_insertion_order = false")
    return src


def drop_rejects(duck: Any) -> None:
    """Drop the CSV reader's reject tables, which a read fills."""
    for t in ("abeval_reject_errors", "abeval_reject_scans"):
        duck.execute(f"DROP TABLE IF EXISTS {t}")


def drop_temp(duck: Any) -> None:
    """Drop the staging tables; after a failed statement the transaction is
    aborted and its rollback drops them instead."""
    import duckdb

    try:
        duck.execute("SET preserve_insertion_order = true")
        duck.execute("RESET disabled_optimizers")  # the direct load's joins (direct.py)
        for t in _TEMP_TABLES:
            duck.execute(f"DROP TABLE IF EXISTS {t}")
    except duckdb.Error:
        pass


def stage_sql(src: Source) -> str:
    """One pass over the file: typed columns, attributes, the bad-row flag and,
    for rows without ``event_id``, a digest of the whole row for deduplication."""
    return "CREATE OR REPLACE TEMP TABLE abeval_stage AS " + stage_select(src)


def stage_select(src: Source) -> str:
    """The ``SELECT`` of :func:`stage_sql`."""
    columns = src.read_columns
    return (
        f"SELECT {', '.join(KNOWN)}, attributes, bad, {normalised()} AS norm, "
        f"{row_key_sql()} AS row_key "
        f"FROM (SELECT *, {attributes_sql(columns)} AS attributes, ({bad_expression()}) AS bad "
        f"FROM ({layered(src.reader(), columns, src.epoch)}) abeval_l) abeval_s"
    )


def attributes_sql(columns: list[str]) -> str:
    """SQL over the text layer: the extra columns of a row as a JSON object (text),
    or NULL when the file has none."""
    names = extras(columns)
    if not names:
        return "CAST(NULL AS VARCHAR)"
    pairs = ", ".join(
        f"{quote_literal(c)}, CAST({extra_alias(i)} AS VARCHAR)" for i, c in enumerate(names)
    )
    return f"CAST(json_object({pairs}) AS VARCHAR)"


def row_key_sql() -> str:
    """SQL over a typed row with ``attributes``: for a row without ``event_id``, a
    digest of the whole row, which identifies it for deduplication."""
    # team joined the format later: a row without one keeps the key it had
    # (concat_ws skips a NULL), so a file loaded again is still found a repeat
    key_parts = ", ".join(
        f"CAST({c} AS VARCHAR)" if c == "team" else f"COALESCE(CAST({c} AS VARCHAR), '')"
        for c in (*KNOWN, "attributes")
        if c != "event_id"
    )
    return f"CASE WHEN event_id IS NULL THEN 'h:' || md5(concat_ws(chr(31), {key_parts})) END"
