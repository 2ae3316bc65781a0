"""abeval's SQL, written once for DuckDB and PostgreSQL, as Spark SQL.

Every statement a Spark store runs goes through :func:`to_spark`: sqlglot
transpiles it from DuckDB's dialect to Spark's, then a few rewrites fix what
sqlglot gets wrong for abeval (docs/design/spark.md §4),
then checks refuse the known traps instead of letting Spark return wrong numbers:

- ``CREATE TEMP TABLE t AS q`` becomes ``CACHE TABLE t AS q``: computed once, which
  the adapter (:mod:`abeval.store.backends.spark.connection`) runs as a checkpointed
  temporary view. sqlglot would write ``CREATE TEMPORARY VIEW``, which Spark
  recomputes at every read.
- ``CAST(x AS JSON) ->> key`` becomes ``FROM_JSON(x, 'map<string,string>')[key]``
  (sqlglot writes ``GET_JSON_OBJECT(TO_JSON(x), key)``, which Spark rejects).
- ``json_object(k, v, ...)`` (the attributes of a table read in place) becomes
  ``TO_JSON(MAP(k, v, ...))``: the same JSON object, keys in the order given
  (sqlglot writes a ``JSON_OBJECT`` Spark does not have).
- ``percentile_cont(p) WITHIN GROUP (ORDER BY v)`` and DuckDB's
  ``quantile_cont(v, p)`` become ``PERCENTILE(v, p)``, Spark's exact quantile with
  the same linear interpolation (sqlglot writes the *approximate*
  ``PERCENTILE_APPROX`` for the first and a call Spark rejects for the second).
- ``percentile_disc(p) WITHIN GROUP (ORDER BY v)`` (the median timestamp of the
  ingest's far-timestamp note) becomes the ``ceil(p * n)``-th of the sorted values,
  ``ELEMENT_AT(ARRAY_SORT(COLLECT_LIST(v)), ...)``: exact and for any type (sqlglot
  writes the approximate ``PERCENTILE_APPROX``, and Spark's ``percentile_disc``
  takes no timestamps). It holds a group's values in one task: fit for the note,
  which runs only when an ingest's experiment spans more than two years.
- A join hint written for Spark, ``SELECT /*+ BROADCAST(t) */ ...`` (a comment to
  DuckDB and PostgreSQL), stays a hint: sqlglot reads it from DuckDB's dialect as a
  comment and would write it before the ``SELECT``, where Spark ignores it.
- Refused: a statement sqlglot cannot parse (kept as a raw command), several
  statements, list slices, numbered parameters (``$1``), JSON functions left over,
  a temporary table with a column list, functions sqlglot does not know (passed
  through verbatim), and output that does not parse back as Spark SQL unchanged.

Identifiers keep their meaning: DuckDB's ``"name"`` comes out as Spark's
```name``` (in Spark, ``"name"`` is a string literal).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, cast

from abeval.errors import AbevalError

if TYPE_CHECKING:
    from sqlglot import exp as sg

#: Functions that sqlglot does not model and that Spark has (checked upper case).
_SPARK_FUNCTIONS = frozenset({"FROM_JSON", "PERCENTILE"})
_JSON_MAP = "map<string,string>"


class DialectError(AbevalError):
    """A statement that cannot be sent to Spark as it is: a portability bug of abeval."""


@lru_cache(maxsize=512)
def to_spark(sql: str) -> str:
    """``sql`` (DuckDB-flavoured, bind parameters as ``:name``) as one Spark SQL
    statement with the same meaning; :class:`DialectError` when it hits a known trap."""
    import logging

    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel, SqlglotError

    # sqlglot logs what it cannot parse; the refusal below says it in one line.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        trees = sqlglot.parse(sql, read="duckdb")
    except SqlglotError as exc:
        raise DialectError(_problem(sql, f"sqlglot cannot parse it ({_first(exc)})")) from None
    statements = [t for t in trees if t is not None]
    if len(statements) != 1:
        raise DialectError(_problem(sql, f"{len(statements)} statements; send one at a time"))
    tree = statements[0]
    if isinstance(tree, exp.Command):
        raise DialectError(_problem(sql, "sqlglot keeps it as a raw command, untranslated"))
    tree = _rewrite(tree)
    try:
        out = tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise DialectError(_problem(sql, f"no Spark equivalent ({_first(exc)})")) from None
    _check(sql, out)
    return out


def spark_native(sql: str) -> str:
    """``sql``, Spark SQL that abeval writes for Spark alone (the DDL of
    :mod:`abeval.store.backends.spark.schema`, the ingest's partitions), checked: one
    statement that sqlglot parses as Spark SQL (not as a raw command) and writes
    back unchanged."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        trees = [t for t in sqlglot.parse(sql, read="spark") if t is not None]
    except SqlglotError as exc:
        raise DialectError(_problem(sql, f"not Spark SQL ({_first(exc)})")) from None
    if len(trees) != 1 or isinstance(trees[0], exp.Command):
        raise DialectError(_problem(sql, "not one Spark SQL statement sqlglot understands"))
    if trees[0].sql(dialect="spark") != sql:
        raise DialectError(_problem(sql, "the Spark text does not read back the same"))
    return sql


def _rewrite(tree: sg.Expr) -> sg.Expr:
    """The fixes of the module docstring, on the DuckDB tree."""
    from sqlglot import exp

    if isinstance(tree, exp.Create) and _is_temporary(tree):
        if not isinstance(tree.expression, exp.Query):
            raise DialectError(
                _problem(
                    tree.sql("duckdb"),
                    "Spark has no temporary table with columns; create a view from data instead",
                )
            )
        tree = exp.Cache(this=tree.this, expression=tree.expression)

    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Select) and node.comments:
            _hint(node)
        if isinstance(node, exp.JSONExtractScalar):
            return _json_text(node)
        if isinstance(node, exp.JSONObject):
            return _json_object(node)
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
            order = node.expression.expressions if node.expression else []
            if len(order) == 1:
                return _percentile(order[0].this, node.this.this)
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileDisc):
            order = node.expression.expressions if node.expression else []
            if len(order) == 1:
                return _percentile_disc(order[0].this, node.this.this)
        if isinstance(node, exp.PercentileCont) and node.expression is not None:
            return _percentile(node.this, node.expression)
        return node

    return tree.transform(fix)


def _hint(select: sg.Select) -> None:
    """The comments of ``select`` that are Spark hints (``+ BROADCAST(t)``) made its
    hint again; other comments are kept."""
    import sqlglot

    hints = [c for c in select.comments or [] if c.lstrip().startswith("+")]
    if not hints:
        return
    text = ", ".join(c.lstrip()[1:].strip() for c in hints)
    parsed = sqlglot.parse_one(f"SELECT /*+ {text} */ 1", read="spark").args.get("hint")
    if parsed is None:
        raise DialectError(_problem(select.sql("duckdb"), f"a hint Spark cannot read: {text}"))
    select.set("hint", parsed)
    select.comments = [c for c in select.comments or [] if c not in hints]


def _is_temporary(create: sg.Create) -> bool:
    from sqlglot import exp

    props = create.args.get("properties")
    return create.kind == "TABLE" and bool(
        props and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)
    )


def _json_text(node: sg.JSONExtractScalar) -> sg.Expression:
    """``FROM_JSON(x, 'map<string,string>')[key]``: the attribute's value as text,
    ``NULL`` when absent, as DuckDB's and PostgreSQL's ``->>`` give it."""
    from sqlglot import exp

    source = node.this.this if isinstance(node.this, exp.Cast) else node.this
    key = node.expression
    if isinstance(key, exp.JSONPath):  # a literal key, which sqlglot reads as the path $.key
        steps = key.expressions
        one_key = (
            len(steps) == 2
            and isinstance(steps[0], exp.JSONPathRoot)
            and isinstance(steps[1], exp.JSONPathKey)
            and isinstance(steps[1].this, str)
        )
        if one_key:
            key = exp.Literal.string(steps[1].this)
    if not isinstance(key, exp.Placeholder | exp.Literal):
        raise DialectError(_problem(node.sql("duckdb"), "JSON path other than one key"))
    parsed = exp.Anonymous(this="FROM_JSON", expressions=[source, exp.Literal.string(_JSON_MAP)])
    return exp.Bracket(this=parsed, expressions=[key])


def _json_object(node: sg.JSONObject) -> sg.Expression:
    """``TO_JSON(MAP(k1, v1, ...))``: a JSON object of text values, as DuckDB's
    ``json_object`` and PostgreSQL's ``json_build_object`` write it."""
    from sqlglot import exp

    pairs = node.expressions
    if not pairs or not all(isinstance(p, exp.JSONKeyValue) for p in pairs):
        raise DialectError(_problem(node.sql("duckdb"), "json_object other than key, value pairs"))
    keys = exp.Array(expressions=[p.this for p in pairs])
    values = exp.Array(expressions=[p.expression for p in pairs])
    return exp.JSONFormat(this=exp.VarMap(keys=keys, values=values))


def _percentile(value: sg.Expression, fraction: sg.Expression) -> sg.Expression:
    from sqlglot import exp

    return exp.Anonymous(this="PERCENTILE", expressions=[value, fraction])


def _percentile_disc(value: sg.Expression, fraction: sg.Expression) -> sg.Expression:
    """The discrete percentile: the ``ceil(p * n)``-th smallest value (the first)."""
    import sqlglot

    v, p = value.sql("spark"), fraction.sql("spark")
    rank = f"CAST(GREATEST(CEIL({p} * COUNT({v})), 1) AS INT)"
    tree = sqlglot.parse_one(f"ELEMENT_AT(ARRAY_SORT(COLLECT_LIST({v})), {rank})", read="spark")
    return cast("sg.Expression", tree)


def _check(sql: str, out: str) -> None:
    """Refuse Spark SQL that hits a known trap (module docstring)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(out, read="spark")
    except SqlglotError as exc:
        raise DialectError(
            _problem(sql, f"the Spark text does not parse ({_first(exc)})")
        ) from None
    if tree.sql(dialect="spark") != out:
        raise DialectError(_problem(sql, "the Spark text does not read back the same"))
    for node in tree.walk():
        trap = _trap(node)
        if trap:
            raise DialectError(_problem(sql, trap))
    if isinstance(tree, exp.Create) and tree.kind == "VIEW" and _is_temporary(tree):
        raise DialectError(_problem(sql, "a temporary view is recomputed at every read"))


def _trap(node: object) -> str | None:
    from sqlglot import exp

    if isinstance(node, exp.Slice):
        return "a list slice, which Spark cannot parse"
    if isinstance(node, exp.Placeholder) and re.fullmatch(r"\d+", str(node.this or "")):
        return "a numbered parameter; bind parameters by name (:name)"
    if isinstance(node, exp.JSONFormat) and isinstance(node.this, exp.VarMap | exp.Map):
        return None  # TO_JSON(MAP(...)): an object built from values, not text parsed
    if isinstance(node, exp.JSONExtract | exp.JSONExtractScalar | exp.JSONFormat):
        return "a JSON function Spark would apply to text; read attributes with ->> key"
    if isinstance(node, exp.ApproxQuantile):
        return "an approximate quantile where an exact one was written"
    if isinstance(node, exp.Anonymous) and str(node.this).upper() not in _SPARK_FUNCTIONS:
        return f"the function {node.this} is unknown to sqlglot and may not exist in Spark"
    return None


def _problem(sql: str, why: str) -> str:
    head = " ".join(sql.split())[:80]
    return f"abeval cannot run this SQL on Spark: {why}: {head}"


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
