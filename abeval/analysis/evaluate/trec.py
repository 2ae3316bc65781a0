"""TREC files for ``abeval evaluate``: qrels as the truth, runs as recommendations.

A file named ``.qrels`` holds ``query_id iteration doc_id relevance`` lines, one
judgment each; a file named ``.run`` holds ``query_id Q0 doc_id rank score tag``
lines, trec_eval's two formats, fields separated by spaces or tabs (``.gz`` or
``.zst`` may follow either name). The query is the user and the document the item. As in
trec_eval, a run is ranked by its score (descending, ties by document id
descending) and its rank column is not read; the iteration, ``Q0`` and tag
fields are not read either. Blank lines are skipped; any other line with the
wrong number of fields, or a relevance or score that is not a number, is an
:class:`~abeval.errors.InputError` naming the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from abeval.errors import InputError
from abeval.files import split_name
from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class TrecFormat:
    """One of trec_eval's two file formats."""

    name: str  # qrels | run
    role: str  # the evaluate role its files fill
    fields: tuple[str, ...]  # the fields of a line, as messages name them
    read: dict[str, tuple[int, str]]  # abeval column -> (1-based field, kind)
    option: str  # the option that takes such a file


QRELS = TrecFormat(
    "qrels",
    "truth",
    ("query_id", "iteration", "doc_id", "relevance"),
    {"user_id": (1, "text"), "item_id": (3, "text"), "grade": (4, "number")},
    "--truth",
)
RUN = TrecFormat(
    "run",
    "recommendations",
    ("query_id", "Q0", "doc_id", "rank", "score", "tag"),
    {"user_id": (1, "text"), "item_id": (3, "text"), "score": (5, "number")},
    "--recommendations",
)
_BY_NAME = {"qrels": QRELS, "run": RUN}
#: A delimiter no TREC line holds, to read each line as one text column.
_LINE = "chr(28) || chr(29) || chr(30) || chr(31)"


def trec_format(path: str | Path) -> TrecFormat | None:
    """The TREC format a file's name says (``.qrels``, ``.run``, maybe compressed)."""
    return _BY_NAME.get(split_name(path)[1] or "")


def load_trec(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: TrecFormat, table: str, role: str
) -> dict[str, str]:
    """Create ``table`` with the abeval columns of ``fmt`` from the file; returns
    abeval column → field name, as :meth:`Reader.load` does."""
    if role != fmt.role:
        raise InputError(
            f"{path}: a TREC {fmt.name} file holds the {fmt.role}, not the {role}; "
            f"give it with {fmt.option}",
            file=str(path),
        )
    con.execute("SET preserve_insertion_order = true")  # line numbers in file order
    con.execute(
        "CREATE TEMP TABLE abeval_trec_lines AS SELECT ROW_NUMBER() OVER () AS line, f "
        "FROM (SELECT string_split_regex(trim(l, ' ' || chr(9) || chr(13)), '[ \\t]+') AS f "
        f"FROM read_csv({quote_literal(str(path))}, columns = {{'l': 'VARCHAR'}}, "
        f"header = false, auto_detect = false, delim = {_LINE}, quote = '', escape = '', "
        "strict_mode = false, null_padding = false)) x"
    )
    try:
        _check_lines(con, path, fmt)
        select = ", ".join(
            f"CAST(f[{i}] AS DOUBLE) AS {name}" if kind == "number" else f"f[{i}] AS {name}"
            for name, (i, kind) in fmt.read.items()
        )
        con.execute(
            f"CREATE TABLE {table} AS SELECT {select} FROM abeval_trec_lines "
            "WHERE f <> [''] ORDER BY line"
        )
    finally:
        con.execute("DROP TABLE abeval_trec_lines")
        con.execute("SET preserve_insertion_order = false")
    if not con.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
        raise InputError(f"{path}: the file has no lines; expected {_expected(fmt)}")
    return {name: fmt.fields[i - 1] for name, (i, _) in fmt.read.items()}


def _expected(fmt: TrecFormat) -> str:
    return f"lines of {len(fmt.fields)} fields: {' '.join(fmt.fields)}"


def _check_lines(con: duckdb.DuckDBPyConnection, path: Path, fmt: TrecFormat) -> None:
    """The first line with the wrong number of fields, or a number field that is
    not a number, as an InputError naming the line."""
    n = len(fmt.fields)
    checks: list[tuple[str, str, int | None]] = [(f"len(f) <> {n}", "len(f)", None)]
    for i, kind in fmt.read.values():
        if kind == "number":
            number = f"TRY_CAST(f[{i}] AS DOUBLE)"
            checks.append((f"({number} IS NULL OR NOT isfinite({number}))", f"f[{i}]", i))
    for condition, shown, field in checks:
        bad = con.execute(
            f"SELECT line, {shown} FROM abeval_trec_lines WHERE f <> [''] AND {condition} "
            "ORDER BY line LIMIT 1"
        ).fetchone()
        if bad is None:
            continue
        line, value = int(bad[0]), bad[1]
        if field is None:
            raise InputError(
                f"{path}:{line}: {value} field{'s' if value != 1 else ''}, expected "
                f"{_expected(fmt)} (TREC {fmt.name}, separated by spaces or tabs); fix the line",
                file=str(path),
                line=line,
            )
        name = fmt.fields[field - 1]
        raise InputError(
            f"{path}:{line}: the {name} {value!r} is not a number; "
            f"write a number as field {field} of the line",
            file=str(path),
            line=line,
            column=name,
        )
