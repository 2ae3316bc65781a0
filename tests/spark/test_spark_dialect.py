"""Every query a report sends to a Spark store transpiles to Spark SQL, without a known trap.

The queries are captured from a report on a small DuckDB store whose connection
says it is Spark (so the report takes the branches it takes on Spark: cached
views, the attribute keys read in Python); that report must equal the plain
DuckDB report. No cluster is needed: the cluster runs them in test_spark_report.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from test_postgres_report import assert_same

from abeval.analysis.online import ReportOptions, build_report
from abeval.simulate import SimulationConfig, write_events
from abeval.store import open_store
from abeval.store.database import Database
from abeval.store.experiments import list_experiments
from abeval.store.ingest import ingest_file
from abeval.store.sql.population import parse_bound

pytest.importorskip("sqlglot")

from abeval.store.backends.spark.dialect import DialectError, to_spark

EXPERIMENT = "home-reco-v2"
#: Segment, window and a cap: the report's every optional query.
OPTIONS = ReportOptions(
    segment="device",
    window_from=parse_bound("2025-03-03", end=False),
    window_to=parse_bound("2025-03-05", end=True),
    caps=(("revenue_per_user", 0.95),),
)


@dataclass(frozen=True)
class _Dialect:
    name: str


class SparkNamed:
    """A DuckDB connection that answers ``dialect.name == "spark"`` and records
    every statement it runs."""

    dialect = _Dialect("spark")

    def __init__(self, conn: Any, sent: list[str]) -> None:
        self._conn = conn
        self._sent = sent

    def execute(self, statement: Any, parameters: Mapping[str, Any] | None = None) -> Any:
        self._sent.append(str(statement))
        return self._conn.execute(statement, parameters)

    def has_table(self, name: str) -> bool:
        """abeval's own tables (sources, recorded evaluations): none yet, as on a
        Spark store where nothing was recorded."""
        return False


def spark_named(store: Database, sent: list[str]) -> None:
    plain = store.connect

    @contextmanager
    def connect() -> Iterator[Any]:
        with plain() as conn:
            yield SparkNamed(conn, sent)

    store.connect = connect  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, list[str]]:
    folder = tmp_path_factory.mktemp("dialect")
    events = folder / "events.csv"
    write_events(SimulationConfig(users=300, seed=7, days=3, pre_period_days=2), events)
    with open_store(str(folder / "s.duckdb")) as store:
        ingest_file(store, events)
    with open_store(str(folder / "s.duckdb"), read_only=True) as store:
        plain = build_report(store, EXPERIMENT, OPTIONS).to_dict()
        sent: list[str] = []
        spark_named(store, sent)
        list_experiments(store)
        as_spark = build_report(store, EXPERIMENT, OPTIONS).to_dict()
    return plain, as_spark, sent


def test_the_spark_branches_give_the_duckdb_report(captured: tuple[dict, dict, list[str]]) -> None:
    plain, as_spark, _ = captured
    assert plain["segments"] and plain["caps"] and plain["offline"] and plain["ope"]
    assert_same(plain, as_spark)


def test_every_query_of_a_report_transpiles(captured: tuple[dict, dict, list[str]]) -> None:
    _, _, sent = captured
    out = [to_spark(sql) for sql in sent]  # raises DialectError on a trap
    # the capture saw every section: the online, replay and off-policy kept tables
    for kept in ("abeval_online_", "abeval_replay_", "abeval_ope_"):
        assert any(kept in sql for sql in sent), kept
    joined = "\n".join(out)
    # The report's temporary tables are cached views; none is a plain temporary one.
    assert joined.count("CACHE TABLE abeval_") == sum("CREATE TEMP TABLE" in s for s in sent) > 0
    assert "TEMPORARY" not in joined and "CREATE TEMP" not in joined
    # The segment query reads attributes with FROM_JSON, the cap with the exact quantile.
    assert "FROM_JSON(e.attributes, 'map<string,string>')[:segment]" in joined
    assert "PERCENTILE(" in joined and "PERCENTILE_APPROX" not in joined
    # Diversity's similarities are broadcast to the lists' pairs (no shuffle of pairs).
    assert "SELECT /*+ BROADCAST(s) */ a.list_id" in joined  # one list id per list
    # The impressions are joined to the population (one row per user) broadcast in
    # the replay's ranked lists and the off-policy counts (and the off-policy kept
    # impressions, the same part): no shuffle of every impression by user.
    assert "SELECT /*+ BROADCAST(p) */ p.arm AS grp, p.user_no" in joined
    assert "SELECT /*+ BROADCAST(p) */ p.arm, e.user_id, e.item_no" in joined
    # Nothing double-quoted survives: in Spark that would be a string literal.
    assert not re.search(r'"', joined)
    assert "DOUBLE PRECISION" not in joined


@pytest.mark.parametrize(
    ("duckdb", "spark"),
    [
        ("CREATE TEMP TABLE t AS SELECT 1 AS a", "CACHE TABLE t AS SELECT 1 AS a"),
        (
            "SELECT CAST(attributes AS JSON) ->> :segment FROM events",
            "SELECT FROM_JSON(attributes, 'map<string,string>')[:segment] FROM events",
        ),
        (  # a team metric's where = { device = "mobile" } (abeval.store.sql.online_variables)
            "SELECT 1 FROM events e WHERE CAST(e.attributes AS JSON) ->> 'device' = 'mobile'",
            "SELECT 1 FROM events AS e WHERE "
            "FROM_JSON(e.attributes, 'map<string,string>')['device'] = 'mobile'",
        ),
        (
            "SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY v) FROM t",
            "SELECT PERCENTILE(v, 0.95) FROM t",
        ),
        ("SELECT quantile_cont(v, 0.5) FROM t", "SELECT PERCENTILE(v, 0.5) FROM t"),
        ('SELECT "we""ird" FROM t', 'SELECT `we"ird` FROM t'),
        ("SELECT CAST(n AS DOUBLE PRECISION) FROM t", "SELECT CAST(n AS DOUBLE) FROM t"),
        ("SELECT 'C:\\new'", "SELECT 'C:\\\\new'"),
        ("SELECT a FROM t WHERE e = :experiment", "SELECT a FROM t WHERE e = :experiment"),
        (  # a join hint (a comment to DuckDB and PostgreSQL) stays a hint, inside a CTE too
            "WITH s AS (SELECT 1 AS a), q AS (SELECT /*+ BROADCAST(s) */ t.a FROM t "
            "LEFT JOIN s ON s.a = t.a) SELECT a FROM q",
            "WITH s AS (SELECT 1 AS a), q AS (SELECT /*+ BROADCAST(s) */ t.a FROM t "
            "LEFT JOIN s ON s.a = t.a) SELECT a FROM q",
        ),
        ("SELECT /* a note */ 1 AS a", "/* a note */ SELECT 1 AS a"),
    ],
)
def test_rewrites(duckdb: str, spark: str) -> None:
    assert to_spark(duckdb) == spark


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT l[1:2] FROM t", "a list slice"),
        ("SELECT a FROM t WHERE b = $1", "does not parse"),
        ("SELECT list_agg(x) FROM t", "the function LIST_AGG is unknown"),
        ("SELECT json_keys(CAST(a AS JSON)) FROM t", "a JSON function"),
        ("SELECT CAST(a AS JSON) ->> '$.b.c' FROM t", "JSON path other than one key"),
        ("CREATE TEMP TABLE t (a TEXT)", "no temporary table with columns"),
        ("RESET memory_limit", "raw command"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("SELECT approx_quantile(v, 0.5) FROM t", "approximate quantile"),
    ],
)
def test_known_traps_are_refused(sql: str, why: str) -> None:
    with pytest.raises(DialectError) as caught:
        to_spark(sql)
    message = caught.value.message
    assert message.startswith("abeval cannot run this SQL on Spark: ")
    assert why in message
    assert "\n" not in message
