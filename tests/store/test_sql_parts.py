"""SQL from named parts (abeval/store/sql/parts.py, shared_ctes.materialize): a
collection renders itself in order, refuses a part read before it is defined,
evaluates parts into temporary tables found by name, and no SQL text in
abeval/store is edited by ``str.replace`` or searched for a part."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlglot import exp

from abeval.store.shared_ctes import drop, materialize
from abeval.store.sql.parts import Cte, PartError, With

STORE = Path(__file__).resolve().parents[2] / "abeval" / "store"

A = Cte("a", "SELECT x FROM src WHERE x > :low")
B = Cte("b", "SELECT x * 10 AS y FROM a", ("a",))
C = Cte("c", "SELECT 7 AS z")
D = Cte("d", "SELECT y + z AS w FROM b CROSS JOIN c", ("b", "c"))


def test_parts_render_in_order() -> None:
    parts = With((A, B)).then(C, D)
    assert parts.names == ("a", "b", "c", "d")
    assert parts.render() == (
        "a AS (SELECT x FROM src WHERE x > :low),\n"
        "b AS (SELECT x * 10 AS y FROM a),\n"
        "c AS (SELECT 7 AS z),\n"
        "d AS (SELECT y + z AS w FROM b CROSS JOIN c)"
    )
    assert parts.sql("SELECT w FROM d") == f"WITH {parts.render()}\nSELECT w FROM d"
    assert With().sql("SELECT 1") == "SELECT 1"


def test_a_part_reads_only_parts_before_it() -> None:
    with pytest.raises(PartError, match=r"'b' reads a, which no part before it defines"):
        With((B, A))
    with pytest.raises(PartError, match=r"'a' is defined twice"):
        With((A, B)).then(Cte("a", "SELECT 1 AS x"))
    parts = With((A, B, C, D))
    # What a part needs, directly or not, in the collection's order; nothing else.
    assert parts.upto("b").names == ("a", "b")
    assert parts.upto("c").names == ("c",)
    assert parts.upto("d").names == ("a", "b", "c", "d")
    swapped = parts.replace(Cte("b", "SELECT 1 AS y"))
    assert swapped.names == parts.names and swapped["b"].reads == ()
    assert swapped.upto("d").names == ("b", "c", "d")


def test_a_name_that_is_not_there_is_one_clear_error() -> None:
    parts = With((A, B))
    message = "no common table expression 'ranked' here (the parts: a, b)"
    for call in (
        lambda: parts["ranked"],
        lambda: parts.upto("ranked"),
        lambda: parts.replace(Cte("ranked", "SELECT 1")),
        lambda: parts.reading({"ranked": "t"}),
    ):
        with pytest.raises(PartError) as caught:
            call()
        assert str(caught.value) == message


@pytest.fixture
def conn(any_engine: Connection) -> Connection:
    """A database of each engine with the table ``src`` of x = 1, 2, 3."""
    any_engine.execute(text("CREATE TABLE src (x INTEGER)"))
    any_engine.execute(text("INSERT INTO src VALUES (1), (2), (3)"))
    return any_engine


def _values(conn: Connection, parts: With, params: dict[str, Any]) -> list[int]:
    rows = conn.execute(text(parts.sql("SELECT w FROM d ORDER BY w")), params).fetchall()
    return [int(r[0]) for r in rows]


def test_a_materialised_part_is_read_by_name(conn: Connection) -> None:
    """Once ``b`` is in a temporary table, the parts read it there: rows added to
    its source later do not show, and ``d`` no longer needs ``a``. An engine
    without temporary tables (SQLite here) keeps the parts as they are."""
    parts = With((A, B, C, D))
    params = {"low": 1}
    assert _values(conn, parts, params) == [27, 37]  # (2, 3) * 10 + 7
    shared, tables = materialize(conn, parts, ("b",), params, "t_parts_")
    conn.execute(text("INSERT INTO src VALUES (4)"))
    if conn.dialect.name == "sqlite":
        assert (shared, tables) == (parts, [])
        assert _values(conn, shared, params) == [27, 37, 47]
        return
    assert tables == ["t_parts_b"]
    assert shared.names == parts.names
    assert shared["b"] == Cte("b", "SELECT * FROM t_parts_b")
    assert shared["d"] == D
    assert shared.upto("d").names == ("b", "c", "d")  # ``a`` is no longer needed
    assert _values(conn, shared, params) == [27, 37]
    assert [r[0] for r in conn.execute(text(shared.upto("d").sql("SELECT w FROM d")))] == [27, 37]
    drop(conn, tables)
    assert _values(conn, parts, params) == [27, 37, 47]


def test_materialising_a_name_that_is_not_there_makes_no_table(tmp_path: Path) -> None:
    engine = create_engine(f"duckdb:///{tmp_path / 'm.duckdb'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE src (x INTEGER)"))
        with pytest.raises(PartError, match="no common table expression 'e' here"):
            materialize(conn, With((A, B)), ("a", "e"), {"low": 0}, "t_parts_")
        made = conn.execute(
            text("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE 't_parts_%'")
        ).scalar()
    engine.dispose()
    assert made == 0


# --- every part abeval builds declares what it reads ---------------------------------


def _store_parts(monkeypatch: pytest.MonkeyPatch) -> list[With]:
    """The collections the report, the replay and the off-policy estimates run:
    those the online queries render (recorded as they do), and the others' parts."""
    from abeval.store.sql import ope_cascade as cascade
    from abeval.store.sql import ope_parts as ope
    from abeval.store.sql.online_caps import cap_values_sql
    from abeval.store.sql.online_daily import daily_moments_sql
    from abeval.store.sql.online_health import health_parts
    from abeval.store.sql.online_moments import arm_moments_sql
    from abeval.store.sql.online_pass import online_ctes
    from abeval.store.sql.online_segments import segment_moments_sql
    from abeval.store.sql.population import population_parts
    from abeval.store.sql.replay_parts import replay_ctes

    rendered: list[With] = []
    plain = With.sql

    def recorded(self: With, select: str) -> str:
        rendered.append(self)
        return plain(self, select)

    monkeypatch.setattr(With, "sql", recorded)
    caps = {"clicks": 5.0}
    arm_moments_sql(14, caps=caps)
    segment_moments_sql(14, caps=caps)
    daily_moments_sql(14, caps=caps, own_day=True)
    cap_values_sql("clicks", 0.9, online_ctes(14))
    assert len(rendered) == 4
    src = population_parts().then(*ope.BASE)
    return [
        *rendered,
        online_ctes(14).then(*health_parts(14, online_ctes(14))),
        src.then(*ope.COUNT_PARTS),
        src.then(ope.EMPIRICAL_PI, *ope.weight_parts(False), ope.user_part(None)),
        src.then(
            *ope.FILE_ROWS,
            ope.FILE_PI,
            *ope.weight_parts(True),
            *cascade.CASCADE_PARTS,
            *cascade.DR_PARTS,
            ope.user_part((1, 2)),
        ),
        replay_ctes({"click": 1.0, "purchase": 2.0})[0],
        replay_ctes({"click": 1.0}, population="abeval_online_population")[0],
    ]


def test_every_part_declares_the_parts_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part's ``reads`` are exactly the earlier parts its SQL names (sqlglot reads
    the SQL here, in the test only), so that materialising one takes what it needs."""
    wrong = []
    for parts in _store_parts(monkeypatch):
        before: set[str] = set()
        for part in parts:
            tree = sqlglot.parse_one(part.body, read="duckdb")
            named = {t.name.lower() for t in tree.find_all(exp.Table)}
            if named & before != set(part.reads):
                wrong.append(f"{part.name}: reads {sorted(named & before)}, says {part.reads}")
            before.add(part.name)
    assert wrong == []


# --- no SQL text edited ----------------------------------------------------------------

#: ``.replace`` calls in abeval/store that edit text which is not SQL, by file and
#: function: a database URL shown with its password masked, and a driver's message
#: with the URL masked.
NOT_SQL = {
    ("backends/url_secrets.py", "masked_url"),
    ("backends/url_secrets.py", "without_secrets"),
}


def text_edits(source: str) -> list[tuple[int, str]]:
    """(line, innermost function) of each ``x.replace(old, new)`` with two
    positional arguments, unless ``old`` is a one-character quote or backslash
    literal (the quoting helpers' escapes: ``name.replace('"', '""')``) or a bytes
    literal. ``datetime.replace(tzinfo=...)`` (keywords) and ``With.replace(part)``
    (one argument) are other methods and pass."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "replace"
            and len(node.args) == 2
        ):
            old = node.args[0]
            literal = old.value if isinstance(old, ast.Constant) else None
            if not (isinstance(literal, bytes) or literal in ("'", '"', "\\")):
                found.append((node.lineno, function))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source), "<module>")
    return found


def test_no_sql_text_is_edited_in_the_store() -> None:
    found = []
    for path in sorted(STORE.rglob("*.py")):
        rel = path.relative_to(STORE).as_posix()
        source = path.read_text(encoding="utf-8")
        if "cte_span" in source:
            found.append(f"abeval/store/{rel}: cte_span (find a part by name: sql.parts.With)")
        for line, function in text_edits(source):
            if (rel, function) not in NOT_SQL:
                found.append(f"abeval/store/{rel}:{line} in {function}: .replace( on text")
    assert found == [], "compose SQL from abeval.store.sql.parts instead:\n" + "\n".join(found)


def test_the_guard_sees_an_edit() -> None:
    edits = [
        'sql = HEALTH_SQL.replace("{base}", base)',
        "cols = seg_col.replace('p.', '')",
        'body = ctes.replace("FROM population p LEFT JOIN", "FROM population_seg p LEFT JOIN")',
        "sql = template.replace(marker, value)",
    ]
    for line in edits:
        assert text_edits(line) == [(1, "<module>")], line
    for line in (
        "quoted = '\"' + name.replace('\"', '\"\"') + '\"'",
        'literal = text.replace("\'", "\'\'")',
        "now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)",
        "parts = parts.replace(Cte('b', 'SELECT 1'))",
        'out.write(chunk.replace(b"\\r\\n", b"\\n"))',
    ):
        assert text_edits(line) == [], line


def test_a_part_is_materialised_with_the_whole_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """The statement that fills a part's table carries every part, not only those the
    part needs: a CTE that several parts read stays one that PostgreSQL computes once
    (inlined into the replay's ranked lists, the events' CTE gave a plan 8x slower)."""
    from abeval.store.backends.duckdb import backend as duck

    sent: list[str] = []
    monkeypatch.setattr(
        duck.DuckDBBackend,
        "materialize",
        lambda self, conn, table, query, params: sent.append(query),
    )
    engine = create_engine("duckdb:///:memory:")
    with engine.connect() as connection:
        materialize(connection, With((A, B, C, D)), ("b",), {"low": 1}, "t_parts_")
    assert len(sent) == 1
    assert all(f"{p.name} AS (" in sent[0] for p in (A, B, C, D)), sent[0]
