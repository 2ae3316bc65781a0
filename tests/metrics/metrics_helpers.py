"""Helpers for the metric tests: run the SQL kernels on small lists given in Python."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import duckdb

from abeval.metrics import Conventions, parse_offline_metrics, ranking_query


def list_values(
    lists: Mapping[str, Sequence[float]],
    judged: Mapping[str, Sequence[float]],
    metrics: str,
    conventions: Conventions | None = None,
) -> dict[str, dict[str, float | None]]:
    """Per-list values of ``metrics`` from the production SQL kernel.

    ``lists`` maps a list id to the relevance grades by position (rank 1 first);
    ``judged`` maps a list id to the grades of all its relevant items (R of them).
    Returns {metric label: {list id: value or None}}.
    """
    specs = parse_offline_metrics(metrics, conventions=conventions)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE ranked (grp VARCHAR, user_id VARCHAR, list_id VARCHAR, item_id VARCHAR, "
        "rank BIGINT, gain DOUBLE)"
    )
    con.execute("CREATE TABLE judged (list_id VARCHAR, gain DOUBLE)")
    for list_id, grades in lists.items():
        for i, g in enumerate(grades):
            con.execute(
                "INSERT INTO ranked VALUES ('m', ?, ?, ?, ?, ?)",
                [list_id, list_id, f"{list_id}-{i}", i + 1, float(g)],
            )
    for list_id, grades in judged.items():
        for g in grades:
            con.execute("INSERT INTO judged VALUES (?, ?)", [list_id, float(g)])
    query = ranking_query(specs)
    cols = ", ".join(mc.column for mc in query.columns)
    rows = con.execute(f"WITH {query.ctes} SELECT list_id, {cols} FROM k_list_values").fetchall()
    out: dict[str, dict[str, float | None]] = {mc.spec.label: {} for mc in query.columns}
    for row in rows:
        for j, mc in enumerate(query.columns):
            out[mc.spec.label][row[0]] = row[1 + j]
    return out


def write_csv(path: Path, header: str, rows: Sequence[Sequence[object]]) -> Path:
    lines = [header, *(",".join(str(v) for v in r) for r in rows)]
    path.write_text("\n".join(lines) + "\n")
    return path
