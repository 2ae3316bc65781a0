"""Integer keys given at ingest (migration 0010): ``request_no`` is the same number
exactly when (experiment, request_id) is the same, ``item_no`` exactly when
item_id is, across several ingests into one store, NULL exactly when the text is;
the direct load, the staged load and PostgreSQL's COPY path all number; the
migration numbers the rows a store held before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from abeval.store import Database, open_store
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
    "e1,B,u2,not-a-time,click,r8,i7,,z2",  # new keys, rejected: not numbered
    "e3,A,u4,2024-05-01T10:02:01Z,impression,r2,i1,1,z3",
]


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def keyed_rows(store: Database) -> list[tuple[object, ...]]:
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


def ingest_three(store: Database, tmp_path: Path) -> None:
    ingest_file(store, write(tmp_path / "a.csv", FIRST))
    ingest_file(store, write(tmp_path / "b.csv", SECOND))
    summary = ingest_file(store, write(tmp_path / "c.csv", THIRD), on_error="skip")
    assert summary.rejected == 1


Keys = tuple[object, object, object]  # (experiment, request_id, item_id) of a row


def keys_of(rows: list[str]) -> list[Keys]:
    """The keys of the CSV lines that load (a row with a bad time is rejected)."""
    cells = [r.split(",") for r in rows]
    return [(c[0], c[5] or None, c[6] or None) for c in cells if c[3] != "not-a-time"]


def dense_numbers(
    ingests: list[list[Keys]],
) -> tuple[dict[tuple[object, object], int], dict[object, int]]:
    """The numbering rule written out: each ingest gives its keys that are new to
    the store the next numbers, in the keys' order, starting after the largest."""
    requests: dict[tuple[object, object], int] = {}
    items: dict[object, int] = {}
    for rows in ingests:
        for key in sorted({(e, r) for e, r, _ in rows if r is not None} - requests.keys()):
            requests[key] = len(requests) + 1
        for item in sorted({i for _, _, i in rows if i is not None} - items.keys()):
            items[item] = len(items) + 1
    return requests, items


def dictionaries(store: Database) -> tuple[dict[tuple[object, object], int], dict[object, int]]:
    with store.connect() as conn:
        requests = conn.execute(text("SELECT experiment, request_id, request_no FROM request_keys"))
        by_request = {(e, r): n for e, r, n in requests}
        items = conn.execute(text("SELECT item_id, item_no FROM item_keys"))
        return by_request, {i: n for i, n in items}


def check_numbers(store: Database, ingests: list[list[Keys]]) -> None:
    """The rows' numbers and the dictionaries are those of :func:`dense_numbers`."""
    rows = keyed_rows(store)
    assert_exact(rows)
    requests, items = dense_numbers(ingests)
    assert {(r[0], r[1]): r[2] for r in rows if r[1] is not None} == requests
    assert {r[3]: r[4] for r in rows if r[3] is not None} == items
    assert dictionaries(store) == (requests, items)


def check_store(store: Database) -> None:
    rows = keyed_rows(store)
    assert len(rows) == 10
    number = {(r[0], r[1]): r[2] for r in rows if r[1] is not None}
    item = {r[3]: r[4] for r in rows if r[3] is not None}
    # the same request in two experiments: two numbers; one item everywhere: one
    assert number[("e1", "r1")] != number[("e2", "r1")]
    assert set(item) == {"i1", "i2", "i3", "i9"}  # not the rejected row's i7
    check_numbers(store, [keys_of(FIRST), keys_of(SECOND), keys_of(THIRD)])


def test_keys_are_exact_across_ingests_on_duckdb(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_three(store, tmp_path)
        check_store(store)


@pytest.mark.postgres
def test_keys_are_exact_across_ingests_on_postgres(tmp_path: Path, postgres_database: str) -> None:
    with open_store(postgres_database) as store:
        ingest_three(store, tmp_path)
        check_store(store)


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
        pending = sorted(int(s.stem[:4]) for s in shipped.glob("*.sql") if int(s.stem[:4]) >= 10)
        assert pending[0] == 10 and [m.version for m in apply(store)] == pending
        held: list[Keys] = [("e1", "r1", "i1"), ("e1", "r1", "i2"), ("e2", "r1", "i1")]
        check_numbers(store, [[*held, ("e1", None, None)]])
        # and an ingest after the migration continues from there
        ingest_file(store, write(tmp_path / "a.csv", FIRST))
        check_numbers(store, [held, keys_of(FIRST)])
    finally:
        store.close()


def test_the_spark_ingest_numbers_its_staged_rows_against_the_stores_keys(
    tmp_path: Path,
) -> None:
    """Spark's ingest numbers in its local DuckDB against the numbers the store
    holds (here a DuckDB store stands in for the cluster; the statement it sends
    is checked to translate to Spark SQL)."""
    import duckdb

    from abeval.store.backends.spark.dialect import to_spark
    from abeval.store.backends.spark.ingest import _number_keys

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
    assert item["i2"] == items["i2"] and item["i1"] == items["i1"]
    staged: list[Keys] = [("e1", "r1", "i2"), ("e1", "r7", "i8"), ("e1", None, None)]
    requests, every_item = dense_numbers([keys_of(FIRST), [*staged, ("e2", "r7", "i1")]])
    assert number == {k: requests[k] for k in number}
    assert item == {k: every_item[k] for k in item}


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
    from abeval.store.backends.spark.schema import _add_new_columns

    old = FakeSpark(holds_rows=True)
    with pytest.raises(StoreError, match="ingest its files again into a new store"):
        _add_new_columns(old, "events")
    assert not any(s.startswith("ALTER") for s in old.sent)
    empty = FakeSpark(holds_rows=False)
    _add_new_columns(empty, "events")
    altered = [s for s in empty.sent if s.startswith("ALTER")]
    assert len(altered) == 1 and "request_no BIGINT" in altered[0]


def test_the_direct_load_numbers_the_identifiers_as_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct load takes the keys from the text as read and trims only the
    distinct ones: identifiers with spaces around them, outside ASCII or behind a
    byte-order mark are numbered as the trimmed values they are stored as, once
    each, and a file without request_id or item_id numbers nothing of them."""
    import abeval.store.ingest.staged as staged

    def no_staging(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the file went to the staged load")

    monkeypatch.setattr(staged, "load_staged", no_staging)
    header = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,event_id"
    lines = [
        "e1,A,u1,2024-05-01T10:00:01Z,impression,r1,i1,1,x1",
        "e1 ,A,u1,2024-05-01T10:00:01Z,impression, r1,i2 ,2,x2",  # the same request
        "\ufeffe1,A,u1,2024-05-01T10:00:02Z,impression,r2,  i1,1,x3",  # e1 behind a mark
        "e2,B,u2,2024-05-01T10:00:03Z,impression,ré1 ,ï3,1,x4",
        "e2,B,u2,2024-05-01T10:00:04Z,impression,ré1,ï3 ,2,x5",
        "e2,B,u2,2024-05-01T10:00:05Z,exposure,,,,x6",
    ]
    path = tmp_path / "spaced.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    clean = [
        (c[0].strip(" \ufeff"), c[5].strip(), c[6].strip()) for c in (x.split(",") for x in lines)
    ]
    keys: list[Keys] = [(e, r or None, i or None) for e, r, i in clean]
    with open_store(str(tmp_path / "s.duckdb")) as store:
        summary = ingest_file(store, path)
        assert (summary.inserted, summary.rejected) == (6, 0)
        check_numbers(store, [keys])
        assert dictionaries(store) == (
            {("e1", "r1"): 1, ("e1", "r2"): 2, ("e2", "ré1"): 3},
            {"i1": 1, "i2": 2, "ï3": 3},
        )
        exposures = tmp_path / "exposures.csv"
        exposures.write_text("experiment,arm,user_id,ts,event_type\ne3,A,u9,2024-05-02,exposure\n")
        ingest_file(store, exposures)
        check_numbers(store, [keys, [("e3", None, None)]])
