"""Reading a ``--target-propensities`` file (docs/metrics.md#off-policy-estimates).

Columns: ``request_id``, ``item_id``, ``position`` (whole number ≥ 1) and
``probability`` (in [0, 1]): the target's marginal probability of showing the
item at that position on that request, for requests of the source arm. An
optional ``arm`` column names the target arm; without it the target of a
request is the other arm of a two-arm experiment. An optional
``probability_given_above`` (in [0, 1], on every row when the column is there)
is the target's probability of that item at that position given the items
above it; it comes with the marginal ``probability``, never instead of it.
DuckDB reads the file (CSV, Parquet, JSON Lines) with the readers of ``abeval
evaluate``; a problem is one line naming ``FILE:LINE:COLUMN`` and the fix.
"""

from __future__ import annotations

from pathlib import Path

from abeval.analysis.evaluate.reader import FileColumn, Reader
from abeval.errors import InputError
from abeval.files import format_of, sha256_file
from abeval.store.events_format import MAX_POSITION
from abeval.store.experiments import TargetFile
from abeval.store.ope_target import TargetRow

GIVEN_ABOVE = "probability_given_above"

_COLUMNS = (
    FileColumn("request_id", ("request_id",), "text"),
    FileColumn("item_id", ("item_id",), "text"),
    FileColumn("position", ("position", "rank"), "number"),
    FileColumn("probability", ("probability", "propensity"), "number"),
    FileColumn("arm", ("arm",), "text", required=False),
    FileColumn(GIVEN_ABOVE, (GIVEN_ABOVE,), "number", required=False),
)
_EXPECTED = (
    f"columns request_id, item_id, position, probability (and optionally arm, {GIVEN_ABOVE})"
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
        fmt = {"jsonl": "json"}.get(format_of(path) or "", format_of(path) or "csv")
        try:
            found = reader.load(path, "t", "target propensities", _COLUMNS, _EXPECTED)
        except InputError:
            _refuse_given_above_alone(reader, path, fmt)
            raise
        checks = (
            (
                "position",
                "TRY_CAST(v AS DOUBLE) < 1 "
                "OR TRY_CAST(v AS DOUBLE) <> FLOOR(TRY_CAST(v AS DOUBLE)) "
                f"OR TRY_CAST(v AS DOUBLE) > {MAX_POSITION}",
                f"is not a whole number from 1 (the top of the list) to {MAX_POSITION}",
            ),
            (
                "probability",
                "TRY_CAST(v AS DOUBLE) < 0 OR TRY_CAST(v AS DOUBLE) > 1",
                "is not a probability between 0 and 1",
            ),
            (
                GIVEN_ABOVE,
                "TRY_CAST(v AS DOUBLE) < 0 OR TRY_CAST(v AS DOUBLE) > 1",
                "is not a probability between 0 and 1",
            ),
        )
        for name, condition, what in checks:
            if name not in found:
                continue
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
        given = GIVEN_ABOVE if GIVEN_ABOVE in found else "CAST(NULL AS DOUBLE)"
        rows = con.execute(
            f"SELECT {arm}, request_id, item_id, CAST(position AS INTEGER), probability, "
            f"{given} FROM t"
        ).fetchall()
    finally:
        con.close()
    return [
        (a, str(r), str(i), int(p), float(q), None if g is None else float(g))
        for a, r, i, p, q, g in rows
    ]


def target_file(path: str | Path) -> TargetFile:
    """The file's checked rows and its SHA-256, to record with an experiment."""
    rows = read_target_propensities(path)
    return TargetFile(str(path), rows, sha256_file(path)[0])


def _refuse_given_above_alone(reader: Reader, path: Path, fmt: str) -> None:
    """The file could not be read: when it has given-above probabilities and no
    marginal ones, the one-line reason (the reader only says a column is missing)."""
    try:
        columns = {name for name, _ in reader.describe(path, fmt)}
    except InputError:
        return
    if GIVEN_ABOVE in columns and not columns & {"probability", "propensity"}:
        raise InputError(
            f"{path}: column {GIVEN_ABOVE} without probability; the marginal probability "
            "of each row is needed beside the given-above one: add a column probability"
        ) from None
