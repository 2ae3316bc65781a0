"""A Spark Connect session behind the few SQLAlchemy ``Connection`` calls abeval makes.

The store code runs ``conn.execute(text(sql), params)`` and reads the result with
``fetchall``/``fetchone``/``one``/``scalar``/``scalars``, by index, by attribute
or through ``row._mapping``; it asks ``conn.dialect.name``. No maintained
SQLAlchemy dialect talks to Spark Connect (docs/design/spark.md §5), so this
module gives exactly those calls: every statement goes through
:func:`abeval.store.backends.spark.dialect.to_spark`, and the parameters are bound by
Spark itself (named parameter markers, ``spark.sql(sql, args=...)``), never
pasted into the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from abeval.store.backends.spark.dialect import to_spark

_MARKER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_CACHE = re.compile(r"CACHE TABLE (\w+) AS (.*)", re.DOTALL)
_DROP = re.compile(r"DROP TABLE IF EXISTS (\w+)")
#: A table read in place is presented through temporary views (abeval.store.source_sql).
_VIEW = re.compile(r"CREATE TEMPORARY VIEW (\w+) AS (.*)", re.DOTALL)
_DROP_VIEW = re.compile(r"DROP VIEW IF EXISTS (\w+)")


class SparkRow(tuple[Any, ...]):
    """One result row: a tuple that also answers ``row.name`` and ``row._mapping``."""

    _fields: tuple[str, ...]

    def __new__(cls, values: Sequence[Any], fields: tuple[str, ...]) -> SparkRow:
        row = super().__new__(cls, values)
        row._fields = fields
        return row

    @property
    def _mapping(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None


class SparkResult:
    """The rows of one statement, all fetched (abeval's results are a few rows)."""

    def __init__(self, rows: list[SparkRow]) -> None:
        self._rows = rows
        self._next = 0

    def __iter__(self) -> Iterator[SparkRow]:
        rows, self._next = self._rows[self._next :], len(self._rows)
        return iter(rows)

    def fetchall(self) -> list[SparkRow]:
        return list(self)

    def fetchone(self) -> SparkRow | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def first(self) -> SparkRow | None:
        return self._rows[0] if self._rows else None

    def one(self) -> SparkRow:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._rows[0]

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalar(self) -> Any:
        row = self.fetchone()
        return row[0] if row is not None else None

    def scalars(self) -> Iterator[Any]:
        return (row[0] for row in self)


@dataclass(frozen=True)
class _Dialect:
    name: str = "spark"


class SparkConnection:
    """``execute`` on a Spark Connect session (``pyspark.sql.connect.session.SparkSession``)."""

    dialect = _Dialect()

    def __init__(self, session: Any, kept: dict[str, Any]) -> None:
        self.session = session
        #: The session's computed temporary views by name (see :meth:`_keep`).
        self.kept = kept

    def execute(self, statement: Any, parameters: Mapping[str, Any] | None = None) -> SparkResult:
        """Run one statement (a ``text()`` clause or a string) with named parameters."""
        if parameters is not None and not isinstance(parameters, Mapping):
            raise TypeError("a Spark store runs one statement per call; no executemany")
        view = _VIEW.fullmatch(str(statement).strip())
        if view:  # a view of the query's plan: analysed once, read like a table
            self._frame(to_spark(view.group(2)), parameters).createOrReplaceTempView(view.group(1))
            return SparkResult([])
        drop_view = _DROP_VIEW.fullmatch(str(statement).strip())
        if drop_view:  # only the session's own view: never a table of that name
            self.session.catalog.dropTempView(drop_view.group(1))
            return SparkResult([])
        sql = to_spark(str(statement))
        cache = _CACHE.fullmatch(sql)
        if cache:
            self._keep(cache.group(1), self._frame(cache.group(2), parameters))
            return SparkResult([])
        drop = _DROP.fullmatch(sql)
        if drop and drop.group(1) in self.kept:
            self.session.catalog.dropTempView(drop.group(1))
            del self.kept[drop.group(1)]
            return SparkResult([])
        frame = self._frame(sql, parameters)
        fields = tuple(frame.columns)
        return SparkResult([SparkRow(tuple(r), fields) for r in frame.collect()])

    def columns(self, statement: Any) -> list[tuple[str, str]]:
        """The (name, type) of each column ``statement`` returns, as Spark names
        the types (``string``, ``bigint``, ``timestamp_ntz``, ...), without running
        it; Spark's ``timestamp`` (an instant, shown in the session's zone) is
        called ``timestamp_ltz``."""
        frame = self.session.sql(to_spark(str(statement)))
        return [(n, "timestamp_ltz" if t == "timestamp" else t) for n, t in frame.dtypes]

    def has_table(self, name: str) -> bool:
        """Whether the session's current database has the table ``name``."""
        return bool(self.session.catalog.tableExists(name))

    def _frame(self, sql: str, parameters: Mapping[str, Any] | None) -> Any:
        used = set(_MARKER.findall(sql))
        args = {k: v for k, v in (parameters or {}).items() if k in used}
        return self.session.sql(sql, args=args or None)

    def _keep(self, name: str, frame: Any) -> None:
        """``frame`` computed now (a local checkpoint in the executors) and readable
        as the temporary view ``name``. A view of SQL text (``CACHE TABLE``) would be
        analysed again at every read, and Spark 4.3 fails to resolve the CTEs of one
        such view read from another's query; a view of a checkpoint is plain data."""
        with _active(self.session):
            done = frame.localCheckpoint(eager=True)
        done.createOrReplaceTempView(name)
        self.kept[name] = done  # the checkpoint lives while this reference does

    def register_arrow(self, name: str, table: Any) -> None:
        """``table`` (a pyarrow Table) as the session's temporary view ``name``."""
        self._keep(name, self.session.createDataFrame(table))


@contextmanager
def _active(session: Any) -> Iterator[None]:
    """``session`` as the thread's active Spark session for the block. pyspark 4.3
    gives a checkpoint's result to the *active* session, which is the first one
    the process opened while that one is open: with two sessions open (a
    notebook's and abeval's), the checkpoint's view would be made in the other
    session and the query here would not find it (DATAFRAME_NOT_FOUND)."""
    holder = getattr(type(session), "_active_session", None)
    if holder is None:  # not a pyspark session
        yield
        return
    previous = getattr(holder, "session", None)
    holder.session = session
    try:
        yield
    finally:
        holder.session = previous
