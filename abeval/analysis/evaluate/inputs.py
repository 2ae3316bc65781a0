"""The input files of ``abeval evaluate``, role by role, and the tables made from them.

A :class:`FileRole` says which columns a file of that role has (truth,
recommendations, predictions, items, history) and how its messages read. Each
``load_*`` function reads one file with :class:`~abeval.analysis.evaluate.reader.Reader`
and prepares the tables the metrics read:

- truth: ``truth(user_id, item_id, grade, gain)``, ``truth_users(user_id, best)``
  and ``judged_all(list_id, gain)`` (the relevant items);
- recommendations number ``i``: ``src_i(user_id, item_id, key)`` (higher key =
  better) and ``rec_users_i(user_id)``;
- predictions number ``i``: ``pred_i(user_id, item_id, prediction)``;
- ``items`` and ``history(user_id, item_id)``.

A (user, item) pair twice in one file is an error, or with ``duplicates=dedupe``
counted once with a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval.analysis.evaluate.reader import FileColumn, Frame, Reader, Source
from abeval.analysis.evaluate.results import FileSummary
from abeval.analysis.evaluate.sql import count, scalar
from abeval.errors import InputError, OptionError
from abeval.files import model_names
from abeval.metrics import Conventions

if TYPE_CHECKING:
    import duckdb

_USER = FileColumn("user_id", ("user_id",), "text")
_ITEM = FileColumn("item_id", ("item_id",), "text")


@dataclass(frozen=True)
class FileRole:
    """What a file of one role holds, and how its messages read."""

    name: str  # truth | recommendations | predictions | items | history
    table: str  # the table the file is read into ({i}: the file's number)
    columns: tuple[FileColumn, ...]
    expected: str  # "columns ...", ends the messages about a bad file
    one_of: tuple[str, ...] = ()  # optional columns of which one is required ...
    one_of_fix: str = ""  # ... and what to do when none is there
    repeated: str = ""  # "user 'u' {repeated} item 'i' twice"
    kept: str = ""  # the warning when repeats are dropped, with {removed} and {users}


TRUTH = FileRole(
    "truth",
    "t_raw",
    (_USER, _ITEM, FileColumn("grade", ("relevance", "rating"), "number", required=False)),
    "columns user_id, item_id and optionally relevance or rating",
    repeated="has",
    kept="{removed} duplicated (user, item) rows in {users} users; "
    "the strongest grade of each is kept",
)
RECOMMENDATIONS = FileRole(
    "recommendations",
    "rec_{i}",
    (
        _USER,
        _ITEM,
        FileColumn("rank", ("rank",), "number", required=False),
        FileColumn("score", ("score",), "number", required=False),
    ),
    "columns user_id, item_id and rank or score, one row per recommended item",
    one_of=("rank", "score"),
    one_of_fix="add a rank (1 = top) or a score (higher = better) column",
    repeated="lists",
    kept="{removed} repeated items in {users} users' lists counted once, at their best position",
)
PREDICTIONS = FileRole(
    "predictions",
    "pred_{i}",
    (_USER, _ITEM, FileColumn("prediction", ("prediction", "score"), "number")),
    "columns user_id, item_id and prediction",
    repeated="has a prediction for",
    kept="{removed} repeated (user, item) predictions; the first is kept",
)
ITEMS = FileRole(
    "items",
    "items_raw",
    (
        _ITEM,
        FileColumn("category", ("category",), "text", required=False),
        FileColumn("features", ("features",), "features", required=False),
    ),
    "columns item_id and optionally category or features",
)
HISTORY = FileRole("history", "history_raw", (_USER, _ITEM), "columns user_id and item_id")


@dataclass(frozen=True)
class Inputs:
    """What was loaded: a summary per file (in the order read), the model name of
    each recommendations file and of each predictions file, and the warnings."""

    files: tuple[FileSummary, ...]
    models: tuple[str, ...]
    predictors: tuple[str, ...]
    warnings: tuple[str, ...]

    def has(self, role: str) -> bool:
        """Whether a file of ``role`` (items, history ...) was given."""
        return any(f.role == role for f in self.files)


#: A model file and its name.
Named = tuple[str, Source]


def named(files: Sequence[Source] | Mapping[str, Source]) -> list[Named]:
    """(name, path) of each model file: the names given (a mapping), else
    :func:`~abeval.files.model_names` of the paths."""
    if isinstance(files, Mapping):
        return list(files.items())
    paths = [str(f) if isinstance(f, Frame) else f for f in files]  # a frame: its name
    return list(zip(model_names(paths), files, strict=True))


def load_inputs(
    con: duckdb.DuckDBPyConnection,
    truth: Source,
    recommendations: Sequence[Named],
    predictions: Sequence[Named],
    items: Source | None,
    history: Source | None,
    conventions: Conventions,
    min_relevance: float | None,
) -> Inputs:
    """Read every input file into ``con`` and prepare its tables (module docstring)."""
    reader = Reader(con)
    warnings: list[str] = []
    files = [load_truth(reader, truth, conventions, min_relevance, warnings)]
    for i, (name, path) in enumerate(recommendations):
        files.append(load_model(reader, RECOMMENDATIONS, i, path, name, conventions, warnings))
    for i, (name, path) in enumerate(predictions):
        files.append(load_model(reader, PREDICTIONS, i, path, name, conventions, warnings))
    models = [name for name, _ in recommendations]
    predictors = [name for name, _ in predictions]
    if items is not None:
        files.append(load_items(reader, items))
    if history is not None:
        files.append(load_history(reader, history))
    return Inputs(tuple(files), tuple(models), tuple(predictors), tuple(warnings))


@dataclass(frozen=True)
class _Read:
    """A file read into its table: the columns found, its rows, and how many of
    them repeat a (user, item) pair (to be dropped)."""

    role: FileRole
    path: Source
    table: str
    cols: dict[str, str]
    rows: int
    removed: int

    def summary(self, name: str, users: int) -> FileSummary:
        return FileSummary(
            self.role.name,
            str(self.path),
            name,
            self.rows,
            users=users,
            duplicates_removed=self.removed,
            columns=self.cols,
        )


def _read(
    reader: Reader,
    role: FileRole,
    path: Source,
    i: int,
    conventions: Conventions,
    warnings: list[str],
) -> _Read:
    """The file of ``role`` (number ``i``) into its table, checked for its columns
    and for repeated (user, item) pairs."""
    table = role.table.format(i=i)
    cols = reader.load(path, table, role.name, role.columns, role.expected)
    if role.one_of and not any(c in cols for c in role.one_of):
        raise InputError(
            f"{path}: missing column {' or '.join(role.one_of)}; expected {role.expected}; "
            f"{role.one_of_fix}"
        )
    rows = count(reader.con, table)
    removed = _drop_repeats(reader.con, table, path, role, conventions, warnings)
    return _Read(role, path, table, cols, rows, removed)


def _refuse_not_finite(con: duckdb.DuckDBPyConnection, read: _Read, column: str) -> None:
    """One line naming the file and column when a value of ``column`` is NaN or
    infinite (a relevance grade of inf would make every metric NaN)."""
    found = con.execute(
        f"SELECT COUNT(*) FROM {read.table} WHERE NOT isfinite({column})"
    ).fetchone()
    if found and found[0]:
        n = int(found[0])
        raise InputError(
            f"{read.path}:{read.cols[column]}: {n} value{'s' if n != 1 else ''} not finite "
            "(NaN or infinite); write a finite number or remove the rows"
        )


def load_truth(
    reader: Reader,
    path: Source,
    conventions: Conventions,
    min_relevance: float | None,
    warnings: list[str],
) -> FileSummary:
    """``truth``, ``truth_users`` and ``judged_all``: an item's gain is its grade
    (1 without a grade column) when the grade is relevant, else 0."""
    con = reader.con
    read = _read(reader, TRUTH, path, 0, conventions, warnings)
    grade = "grade" if "grade" in read.cols else "1.0"
    if "grade" in read.cols:
        _refuse_not_finite(con, read, "grade")
    source = read.table
    if read.removed:
        source = (
            f"(SELECT user_id, item_id, MAX({grade}) AS grade FROM {read.table} "
            "GROUP BY user_id, item_id)"
        )
        grade = "grade"
    if min_relevance is not None and not math.isfinite(min_relevance):
        raise OptionError("min_relevance", min_relevance, "give a finite relevance grade")
    relevant = f"{grade} > 0" if min_relevance is None else f"{grade} >= {float(min_relevance)!r}"
    con.execute(
        f"CREATE TABLE truth AS SELECT user_id, item_id, CAST({grade} AS DOUBLE) AS grade, "
        f"CASE WHEN {relevant} AND {grade} > 0 THEN CAST({grade} AS DOUBLE) ELSE 0.0 END AS gain "
        f"FROM {source} t"
    )
    con.execute(
        "CREATE TABLE truth_users AS SELECT user_id, MAX(gain) AS best FROM truth GROUP BY user_id"
    )
    con.execute(
        "CREATE TABLE judged_all AS SELECT user_id AS list_id, gain FROM truth WHERE gain > 0"
    )
    return read.summary("truth", count(con, "truth_users"))


def load_model(
    reader: Reader,
    role: FileRole,
    i: int,
    path: Source,
    name: str,
    conventions: Conventions,
    warnings: list[str],
) -> FileSummary:
    """Recommendations or predictions file number ``i``, of the model ``name``."""
    read = _read(reader, role, path, i, conventions, warnings)
    if role is RECOMMENDATIONS:
        users = _rank_lists(reader.con, i, read)
    else:
        users = _one_prediction_per_pair(reader.con, read)
    return read.summary(name, users)


def _rank_lists(con: duckdb.DuckDBPyConnection, i: int, read: _Read) -> int:
    """``src_i`` (the ranking key: -rank, else score; a repeated item at its best
    position) and ``rec_users_i``; returns the number of users."""
    table, cols = read.table, read.cols
    source = table
    if read.removed:
        order = "rank ASC, item_id DESC" if "rank" in cols else "score DESC, item_id DESC"
        source = (
            f"(SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id, item_id "
            f"ORDER BY {order}) AS occurrence FROM {table}) x WHERE occurrence = 1)"
        )
    # The ranking key: higher is better; ties break by item id descending (trec_eval).
    key = "-rank" if "rank" in cols else "score"
    con.execute(f"CREATE VIEW src_{i} AS SELECT user_id, item_id, {key} AS key FROM {source} s")
    con.execute(f"CREATE TABLE rec_users_{i} AS SELECT user_id FROM {table} GROUP BY user_id")
    return count(con, f"rec_users_{i}")


def _one_prediction_per_pair(con: duckdb.DuckDBPyConnection, read: _Read) -> int:
    """``pred_i`` keeps the first of repeated predictions; returns the number of users."""
    table = read.table
    if read.removed:
        con.execute(
            f"CREATE TABLE {table}_d AS SELECT user_id, item_id, "
            "ANY_VALUE(prediction) AS prediction "
            f"FROM {table} GROUP BY user_id, item_id"
        )
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {table}_d RENAME TO {table}")
    return scalar(con, f"SELECT COUNT(DISTINCT user_id) FROM {table}")


def load_items(reader: Reader, path: Source) -> FileSummary:
    """``items``: the catalogue, with categories or feature vectors when given."""
    cols = reader.load(path, ITEMS.table, ITEMS.name, ITEMS.columns, ITEMS.expected)
    reader.con.execute(f"CREATE TABLE items AS SELECT * FROM {ITEMS.table}")
    return FileSummary("items", str(path), "items", count(reader.con, "items"), columns=cols)


def load_history(reader: Reader, path: Source) -> FileSummary:
    """``history``: the distinct (user, item) pairs users interacted with before."""
    cols = reader.load(path, HISTORY.table, HISTORY.name, HISTORY.columns, HISTORY.expected)
    reader.con.execute(
        f"CREATE TABLE history AS SELECT DISTINCT user_id, item_id FROM {HISTORY.table}"
    )
    rows = count(reader.con, HISTORY.table)
    return FileSummary("history", str(path), "history", rows, columns=cols)


def _drop_repeats(
    con: duckdb.DuckDBPyConnection,
    table: str,
    path: Source,
    role: FileRole,
    conventions: Conventions,
    warnings: list[str],
) -> int:
    """How many rows of ``table`` repeat a (user, item) pair and are to be dropped
    (0 when none). Under ``duplicates=error`` a repeat is an InputError; else the
    role's warning is added."""
    dup = _duplicates(con, table)
    if dup is None:
        return 0
    extra, users, user, item = dup
    if conventions.duplicates == "error":
        more = f" ({extra} duplicated rows in {users} users)" if extra > 1 else ""
        raise InputError(
            f"{path}: user {user!r} {role.repeated} item {item!r} twice{more}; "
            "remove the duplicates or pass {duplicates} dedupe to count each item once",
            parameters=("duplicates",),
        )
    warnings.append(f"{path}: " + role.kept.format(removed=extra, users=users))
    return extra


def _duplicates(con: duckdb.DuckDBPyConnection, table: str) -> tuple[int, int, str, str] | None:
    """(extra rows, users with a repeated item, an example user, its item) or None.

    A repeated (user, item) pair has one hash, so when no two rows share a hash
    there is no repeat (the fast, usual case); otherwise the exact check below finds
    them (or a mere hash collision). The screen sorts the hashes and compares each
    with the one before it: on 10M rows that takes about half the work of
    ``COUNT(DISTINCT hash)``, whose hash table of every pair costs more than the sort
    (benchmarks/RESULTS.md, the evaluate section of issue 13)."""
    screen = con.execute(
        "SELECT COUNT(*) FROM (SELECT h, lag(h) OVER (ORDER BY h) AS before "
        f"FROM (SELECT hash(user_id, item_id) AS h FROM {table}) x) y WHERE h = before"
    ).fetchone()
    if screen is None or int(screen[0]) == 0:
        return None
    pairs = (
        f"SELECT user_id, item_id, COUNT(*) AS c FROM {table} "
        "GROUP BY user_id, item_id HAVING COUNT(*) > 1"
    )
    row = con.execute(
        f"SELECT COUNT(*), SUM(c - 1), COUNT(DISTINCT user_id) FROM ({pairs}) x"
    ).fetchone()
    if row is None or int(row[0]) == 0:
        return None
    example = con.execute(
        f"SELECT user_id, item_id FROM ({pairs}) x ORDER BY user_id, item_id LIMIT 1"
    ).fetchone()
    assert example is not None
    return int(row[1]), int(row[2]), str(example[0]), str(example[1])
