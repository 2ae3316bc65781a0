"""Reading a ``--target-propensities`` file (docs/metrics.md#off-policy-estimates).

Columns: ``request_id``, ``item_id``, ``position`` (whole number ≥ 1) and
``probability`` (in [0, 1]): the target's probability of showing the item at
that position on that request, for requests of the source arm. An optional
``probability_given_above`` (in [0, 1]) is the target's probability of the item
at that position given the items the source's list shows above it (the step
estimators, docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators). An
optional ``arm`` column names the target arm; without it the target of a request is the
other arm of a two-arm experiment. DuckDB reads the file (CSV, Parquet, JSON
Lines) with the readers of ``abeval evaluate``; a problem is one line naming
``FILE:LINE:COLUMN`` and the fix.
"""

from __future__ import annotations

from pathlib import Path

from abeval.analysis.evaluate.reader import Column, Reader
from abeval.errors import InputError
from abeval.files import format_of

#: (target arm or None, request_id, item_id, position, probability, given above)
TargetRow = tuple[str | None, str, str, int, float, float | None]

_COLUMNS = (
    Column("request_id", ("request_id",), "text"),
    Column("item_id", ("item_id",), "text"),
    Column("position", ("position", "rank"), "number"),
    Column("probability", ("probability", "propensity"), "number"),
    Column("arm", ("arm",), "text", required=False),
    Column("probability_given_above", ("probability_given_above",), "number", required=False),
)
_EXPECTED = (
    "columns request_id, item_id, position, probability (and optionally arm, "
    "probability_given_above)"
)


def _where(path: Path, row: int) -> str:
    fmt = format_of(path)
    if fmt in ("csv", "jsonl"):
        return f"{path}:{row + 1 if fmt == 'csv' else row}"
    return f"{path}:row {row}"


def read_target_propensities(path: str | Path) -> list[TargetRow]:
    """The rows of the file, checked (module docstring)."""
    import duckdb

    path = Path(path)
    con = duckdb.connect()
    try:
        reader = Reader(con)
        found = reader.load(path, "t", "target propensities", _COLUMNS, _EXPECTED)
        fmt = {"jsonl": "json"}.get(format_of(path) or "", format_of(path) or "csv")
        checks = (
            (
                "position",
                "TRY_CAST(v AS DOUBLE) < 1 "
                "OR TRY_CAST(v AS DOUBLE) <> FLOOR(TRY_CAST(v AS DOUBLE))",
                "is not a whole number from 1 (the top of the list)",
            ),
            *(
                (
                    name,
                    "TRY_CAST(v AS DOUBLE) < 0 OR TRY_CAST(v AS DOUBLE) > 1",
                    "is not a probability between 0 and 1",
                )
                for name in ("probability", "probability_given_above")
                if name in found
            ),
        )
        for name, condition, what in checks:
            bad = reader.locate(path, fmt, found[name], condition)
            if bad is not None:
                raise InputError(
                    f"{_where(path, bad[0])}:{found[name]}: {bad[1]} {what}; fix or remove the row"
                )
        arm = "arm" if "arm" in found else "CAST(NULL AS VARCHAR)"
        con.execute("SET preserve_insertion_order = true")
        dup = con.execute(
            "SELECT rn, request_id FROM (SELECT rn, request_id, COUNT(*) OVER (PARTITION BY a, "
            "request_id, item_id, position ORDER BY rn ROWS UNBOUNDED PRECEDING) AS seen FROM "
            f"(SELECT ROW_NUMBER() OVER () AS rn, {arm} AS a, request_id, item_id, position "
            "FROM t) n) x WHERE seen > 1 ORDER BY rn LIMIT 1"
        ).fetchone()
        if dup is not None:
            raise InputError(
                f"{_where(path, int(dup[0]))}:{found['request_id']}: request {dup[1]} lists "
                "the same item at the same position twice; keep one row"
            )
        given = "probability_given_above" if "probability_given_above" in found else "NULL"
        rows = con.execute(
            f"SELECT {arm}, request_id, item_id, CAST(position AS INTEGER), probability, "
            f"CAST({given} AS DOUBLE) FROM t"
        ).fetchall()
    finally:
        con.close()
    return [
        (a, str(r), str(i), int(p), float(q), None if g is None else float(g))
        for a, r, i, p, q, g in rows
    ]
