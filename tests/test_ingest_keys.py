"""Integer keys given at ingest (migration 0010): ``request_no`` is the same number
exactly when (experiment, request_id) is the same, ``item_no`` exactly when
item_id is, across several ingests into one store, NULL exactly when the text is;
the direct load, the staged load and PostgreSQL's COPY path all number; the
migration numbers the rows a store held before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from abeval.store import Store, open_store
from abeval.store.ingest import ingest_file
from abeval.store.migrate import apply

HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,event_id"

FIRST = [
    "e1,A,u1,2024-05-01T10:00:00Z,exposure,,,,x1",
    "e1,A,u1,2024-05-01T10:00:01Z,impression,r1,i1,1,x2",
    "e1,A,u1,2024-05-01T10:00:01Z,impression,r1,i2,2,x3",
    "e1,B,u2,2024-05-01T10:00:02Z,impression,r2,i2,1,x4",
    "e2,A,u3,2024-05-01T10:00:03Z,impression,r1,i3,1,x5",  # r1 again, another experiment
]
# a later file: a click on an impression of the first file, a new request and item
SECOND = [
    "e1,A,u1,2024-05-01T10:01:00Z,click,r1,i2,,y1",
    "e1,B,u2,2024-05-01T10:01:01Z,impression,r9,i9,1,y2",
    "e2,A,u3,2024-05-01T10:01:02Z,click,r1,i1,,y3",
]
# a bad row sends the file through the staged load (--on-error skip keeps the rest)
THIRD = [
    "e1,B,u2,2024-05-01T10:02:00Z,click,r9,i9,,z1",
    "e1,B,u2,not-a-time,click,r9,i9,,z2",
    "e3,A,u4,2024-05-01T10:02:01Z,impression,r2,i1,1,z3",
]


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def keyed_rows(store: Store) -> list[tuple[object, ...]]:
    with store.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text("SELECT experiment, request_id, request_no, item_id, item_no FROM events")
            )
        ]


def assert_exact(rows: list[tuple[object, ...]]) -> None:
    """Each key has one number and each number one key; NULL exactly when NULL."""
    requests: dict[tuple[object, object], set[object]] = {}
    items: dict[object, set[object]] = {}
    for experiment, request_id, request_no, item_id, item_no in rows:
        assert (request_id is None) == (request_no is None)
        assert (item_id is None) == (item_no is None)
        if request_id is not None:
            requests.setdefault((experiment, request_id), set()).add(request_no)
        if item_id is not None:
            items.setdefault(item_id, set()).add(item_no)
    for numbers in (requests, items):
        assert all(len(n) == 1 for n in numbers.values()), numbers
        assert len({next(iter(n)) for n in numbers.values()}) == len(numbers)


def ingest_three(store: Store, tmp_path: Path) -> None:
    ingest_file(store, write(tmp_path / "a.csv", FIRST))
    ingest_file(store, write(tmp_path / "b.csv", SECOND))
    summary = ingest_file(store, write(tmp_path / "c.csv", THIRD), on_error="skip")
    assert summary.rejected == 1


def duck_hash(*texts: str) -> int:
    """DuckDB's hash of the texts without its top bit: the number a DuckDB
    ingest gives a key whose hash no other key of the store shares."""
    import duckdb

    marks = ", ".join("CAST(? AS VARCHAR)" for _ in texts)
    return int(duckdb.execute(f"SELECT hash({marks}) >> 1", list(texts)).fetchone()[0])  # type: ignore[index]


def check_store(store: Store, hashed: bool) -> None:
    rows = keyed_rows(store)
    assert len(rows) == 10
    assert_exact(rows)
    number = {(r[0], r[1]): r[2] for r in rows if r[1] is not None}
    item = {r[3]: r[4] for r in rows if r[3] is not None}
    # the same request in two experiments: two numbers; one item everywhere: one
    assert number[("e1", "r1")] != number[("e2", "r1")]
    assert set(item) == {"i1", "i2", "i3", "i9"}
    if hashed:  # each key's hash (no two of these collide)
        assert number == {k: duck_hash(*k) for k in number}
        assert item == {k: duck_hash(k) for k in item}
    else:  # the next free number below the smallest each time
        assert sorted(number.values()) == [-5, -4, -3, -2, -1]  # e1 r1 r2 r9, e2 r1, e3 r2
        assert sorted(item.values()) == [-4, -3, -2, -1]


def test_keys_are_exact_across_ingests_on_duckdb(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_three(store, tmp_path)
        check_store(store, hashed=True)


@pytest.mark.postgres
def test_keys_are_exact_across_ingests_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    with open_store(postgres_database) as store:
        ingest_three(store, tmp_path)
        check_store(store, hashed=False)


def test_the_migration_numbers_the_rows_a_store_held(tmp_path: Path) -> None:
    from abeval.resources import data_dir

    shipped = data_dir("migrations")
    before = tmp_path / "upto9"
    before.mkdir()
    for step in sorted(shipped.glob("*.sql")):
        if int(step.stem[:4]) < 10:
            (before / step.name).write_text(step.read_text())
    store = open_store(str(tmp_path / "old.duckdb"), migrate=False)
    try:
        apply(store, before)
        columns = "experiment, arm, user_id, ts, event_type, request_id, item_id, ingest_id"
        with store.begin() as conn:
            for i, (exp, req, item) in enumerate(
                [("e1", "r1", "i1"), ("e1", "r1", "i2"), ("e2", "r1", "i1"), ("e1", None, None)]
            ):
                conn.execute(
                    text(
                        f"INSERT INTO events ({columns}) VALUES "
                        "(:e, 'A', 'u', TIMESTAMP '2024-05-01 10:00:00', 'impression', :r, :i, :n)"
                    ),
                    {"e": exp, "r": req, "i": item, "n": i},
                )
        assert [m.version for m in apply(store)] == [10]
        rows = keyed_rows(store)
        assert_exact(rows)
        assert sorted({(r[0], r[1], r[2]) for r in rows if r[1]}) == [
            ("e1", "r1", duck_hash("e1", "r1")),
            ("e2", "r1", duck_hash("e2", "r1")),
        ]
        assert sorted({(r[3], r[4]) for r in rows if r[3]}) == [
            ("i1", duck_hash("i1")),
            ("i2", duck_hash("i2")),
        ]
        # and an ingest after the migration continues from there
        ingest_file(store, write(tmp_path / "a.csv", FIRST))
        assert_exact(keyed_rows(store))
    finally:
        store.close()


def test_the_spark_ingest_numbers_its_staged_rows_against_the_stores_keys(
    tmp_path: Path,
) -> None:
    """Spark's ingest numbers in its local DuckDB against the numbers the store
    holds (here a DuckDB store stands in for the cluster; the statement it sends
    is checked to translate to Spark SQL)."""
    import duckdb

    from abeval.store.spark.dialect import to_spark
    from abeval.store.spark.ingest import _number_keys

    sent: list[str] = []

    class Landing:
        def __init__(self, conn: object) -> None:
            self.conn = self
            self._conn = conn

        def execute(self, statement: object, params: object = None) -> object:
            sent.append(str(statement))
            return self._conn.execute(statement, params)  # type: ignore[attr-defined]

    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_file(store, write(tmp_path / "a.csv", FIRST))
        stored = {(r[0], r[1]): r[2] for r in keyed_rows(store) if r[1] is not None}
        items = {r[3]: r[4] for r in keyed_rows(store) if r[3] is not None}
        duck = duckdb.connect()
        duck.execute(
            "CREATE TEMP TABLE abeval_stage AS SELECT * FROM (VALUES "
            "('e1', 'r1', 'i2', false), ('e1', 'r7', 'i8', false), ('e1', NULL, NULL, false), "
            "('e2', 'r7', 'i1', false)) t(experiment, request_id, item_id, bad)"
        )
        with store.connect() as conn:
            _number_keys(Landing(conn), duck, ["e1", "e2"])  # type: ignore[arg-type]
    assert all(to_spark(sql) for sql in sent)
    got = duck.execute(
        "SELECT experiment, request_id, request_no, item_id, item_no FROM abeval_stage"
    ).fetchall()
    assert_exact(got)
    number = {(r[0], r[1]): r[2] for r in got if r[1] is not None}
    item = {r[3]: r[4] for r in got if r[3] is not None}
    assert number[("e1", "r1")] == stored[("e1", "r1")]  # known: kept
    low = min(0, *stored.values())
    assert sorted([number[("e1", "r7")], number[("e2", "r7")]]) == [low - 2, low - 1]
    assert item["i2"] == items["i2"] and item["i1"] == items["i1"]
    assert item["i8"] == min(0, *items.values()) - 1


def test_colliding_hashes_fall_back_to_exact_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hash that gives different keys one number (here: three numbers for
    every key) is caught, and the ingest's rows are numbered exactly."""
    from abeval.store.backends.duck import DuckDBBackend

    def three(self: DuckDBBackend, columns: list[str]) -> str:
        texts = ", ".join(f"CAST({c} AS VARCHAR)" for c in columns)
        return f"CAST(hash({texts}) % 3 AS BIGINT)"

    monkeypatch.setattr(DuckDBBackend, "key_hash", three)
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_three(store, tmp_path)
        check_store(store, hashed=False)


def test_a_hashing_ingest_meets_exact_numbers_already_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's numbers came from the exact path (as on an engine without a
    hash, or from a fallback); a later file hashes. A request and an item that
    span the two files keep one number, and the numbers stay exact."""
    from abeval.store.backends.duck import DuckDBBackend

    with open_store(str(tmp_path / "s.duckdb")) as store:
        with monkeypatch.context() as patched:
            patched.setattr(DuckDBBackend, "key_hash", lambda self, columns: None)
            ingest_file(store, write(tmp_path / "a.csv", FIRST))
        before = {(r[0], r[1], r[3]): (r[2], r[4]) for r in keyed_rows(store)}
        assert before[("e1", "r1", "i2")] == (-1, -2)  # exact: e1 r1, item i2
        ingest_file(store, write(tmp_path / "b.csv", SECOND))
        rows = keyed_rows(store)
        assert_exact(rows)
        after = {(r[0], r[1], r[3]): (r[2], r[4]) for r in rows}
        # the click on r1/i2 of the first file takes the impression's numbers
        assert after[("e1", "r1", "i2")] == before[("e1", "r1", "i2")]
        assert after[("e2", "r1", "i1")][0] == before[("e2", "r1", "i3")][0]
        assert after[("e2", "r1", "i1")][1] == before[("e1", "r1", "i1")][1]
        # the new request and item of the second file: exact too (the fallback)
        assert after[("e1", "r9", "i9")] == (-4, -4)  # after e1 r1 r2, e2 r1; i1 i2 i3


class FakeSpark:
    """Answers the statements ``_add_new_columns`` sends: ``events`` described
    without the integer keys, holding rows or not."""

    def __init__(self, holds_rows: bool) -> None:
        self.holds_rows = holds_rows
        self.sent: list[str] = []

    def sql(self, statement: str) -> FakeSpark:
        self.sent.append(statement)
        self.answer: list[tuple[str, ...]] = []
        if statement.startswith("DESCRIBE"):
            self.answer = [("experiment", "string"), ("request_id", "string"), ("ingest_id", "")]
        elif statement.startswith("SELECT 1") and self.holds_rows:
            self.answer = [("1",)]
        return self

    def collect(self) -> list[tuple[str, ...]]:
        return self.answer


def test_a_spark_events_table_with_rows_and_no_keys_is_refused() -> None:
    """Rows stored before the keys would read NULL keys and drop out of the
    replay: the write that would add the columns refuses, naming the fix."""
    from abeval.errors import StoreError
    from abeval.store.spark.schema import _add_new_columns

    old = FakeSpark(holds_rows=True)
    with pytest.raises(StoreError, match="ingest its files again into a new store"):
        _add_new_columns(old, "events")
    assert not any(s.startswith("ALTER") for s in old.sent)
    empty = FakeSpark(holds_rows=False)
    _add_new_columns(empty, "events")
    altered = [s for s in empty.sent if s.startswith("ALTER")]
    assert len(altered) == 1 and "request_no BIGINT" in altered[0]
