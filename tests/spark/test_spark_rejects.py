"""``abeval ingest --on-error skip`` on a Spark store, and ``ABEVAL_SPARK_UPLOAD``.

The Spark tests (marked ``spark``) load one file with bad rows of every kind into
a Spark store and a DuckDB store after the same first file: a row failing a
check, a malformed CSV line, an ``event_id`` used twice in the file with other
content, one the store holds with other content (on Spark found on the cluster,
after the local check), a row repeated, rows already stored. The summary, the
ingest records, the rows of each table and ``abeval rejects`` must be DuckDB's;
the counts are worked out by hand from how the file was made. Bookkeeping cut
short registers the bad rows with the next ingest.

The unmarked tests check the variable that chooses the upload path: any value
but the documented ones stops a writer in one line, before it connects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_spark_ingest import _records, _run, _said, _summary
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.store.backends.spark.landing import Landing
from abeval.store.backends.spark.parquet_out import UPLOAD_ENV, upload_mode

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``first.csv`` (rows 0-49 of a simulated experiment) and ``skip.csv`` (rows
    40-199 with: row 45 moved to another user, a position of 0 in the first
    impression from row 60, row 70 with a field too many, copies of rows 80 and
    41 with another user, a copy of row 90), and ``last.csv`` (rows 200-219)."""
    folder = tmp_path_factory.mktemp("reject-files")
    made = folder / "made.csv"
    write_events(SimulationConfig(users=30, seed=4, days=1, pre_period_days=0), made)
    header, *rows = made.read_text().splitlines()
    fields = [r.split(",") for r in rows]

    def changed(i: int, column: int, value: str) -> str:
        row = list(fields[i])
        row[column] = value
        return ",".join(row)

    impression = next(i for i in range(60, 200) if fields[i][4] == "impression")
    assert impression < 70
    skip = [
        *rows[40:45],
        changed(45, 2, fields[45][2] + "-moved"),
        *rows[46:impression],
        changed(impression, 7, "0"),
        *rows[impression + 1 : 70],
        rows[70] + ",extra",
        *rows[71:200],
        changed(80, 2, fields[80][2] + "-moved"),
        rows[90],
        changed(41, 2, fields[41][2] + "-moved"),
    ]
    out = {"first": rows[:50], "skip": skip, "last": rows[200:220]}
    paths = {}
    for name, lines in out.items():
        paths[name] = folder / f"{name}.csv"
        paths[name].write_text("\n".join([header, *lines]) + "\n")
    return paths


def _rejected(url: str) -> dict[str, int]:
    """The rows of ``rejected_rows`` a reader of the Spark store sees, by partition."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        rows = session.sql(
            "SELECT ingest_id, COUNT(*) FROM rejected_rows GROUP BY ingest_id"
        ).collect()
        return {f"ingest_id={r[0]}": int(r[1]) for r in rows}
    finally:
        session.stop()


def _events(db: str) -> list[tuple[Any, ...]]:
    """How many rows of ``events`` each ingest holds."""
    from sqlalchemy import text

    from abeval.store import open_store

    with open_store(db, read_only=True) as store, store.connect() as conn:
        rows = conn.execute(
            text("SELECT ingest_id, COUNT(*) FROM events GROUP BY ingest_id ORDER BY ingest_id")
        ).fetchall()
    return [tuple(r) for r in rows]


#: rows 40-199 (160), the malformed line (a row read all the same), three copies
READ = 160 + 3
#: rows 40-49 but 45 and 41
STORED = 8
#: the position of 0, the malformed line
REJECTED = 2
#: rows 80 and 41 and their copies with another user (41 also stored, so worded as
#: held), row 45 held with another user
CONFLICTS = 5
INSERTED = READ - STORED - 1 - CONFLICTS - REJECTED


@pytest.mark.spark
@pytest.mark.parametrize("upload", ["auto", "connect"])
def test_skip_keeps_the_bad_rows_as_duckdb_does(
    upload: str, spark: str, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written here, or sent through Spark Connect."""
    monkeypatch.setenv(UPLOAD_ENV, upload)
    duck = str(tmp_path / "s.duckdb")
    skip = str(files["skip"])
    for db in (duck, spark):
        _run("ingest", str(files["first"]), "--db", db)
    said = [_said("ingest", skip, "--on-error", "skip", "--db", db) for db in (duck, spark)]
    assert said[0] == said[1]
    assert said[1].splitlines()[:2] == [
        f"{skip}: {READ} rows read: {INSERTED} inserted, 1 repeated in the file, "
        f"{STORED} already in the store, {CONFLICTS} conflicting, {REJECTED} rejected (T)",
        f"  {REJECTED + CONFLICTS} bad rows kept in rejected_rows (ingest 2); list them "
        "with `abeval rejects --ingest 2`",
    ]
    assert _records(duck) == _records(spark)
    assert [r[5:10] for r in _records(spark)][1] == (
        READ,
        INSERTED,
        STORED + 1,
        REJECTED + CONFLICTS,
        "partial",
    )
    assert _events(spark) == _events(duck) == [(1, 50), (2, INSERTED)]
    assert _rejected(spark) == {"ingest_id=2": REJECTED + CONFLICTS}
    listed = [_run("rejects", "--db", db) for db in (duck, spark)]
    assert listed[0].stdout == listed[1].stdout
    assert len([line for line in listed[1].stdout.splitlines() if line.startswith(skip)]) == 7
    assert listed[1].stdout.count("is already in the store (ingest 1) with different") == 3
    docs = [json.loads(_run("rejects", "--json", "--db", db).stdout) for db in (duck, spark)]
    assert docs[0] == docs[1]
    assert sorted(r["column"] or "" for r in docs[1]) == ["", *["event_id"] * 5, "position"]
    one = [_run("rejects", "--ingest", "1", "--db", db) for db in (duck, spark)]
    assert one[0].stderr == one[1].stderr == "no rejected rows in ingest 1\n"
    short = [_run("rejects", "--limit", "2", "--db", db).stdout for db in (duck, spark)]
    assert short[0] == short[1] == "".join(listed[0].stdout.splitlines(True)[:4])


@pytest.mark.spark
def test_bad_rows_of_bookkeeping_cut_short_come_with_the_next_ingest(
    spark: str, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut after the commit, the ingest's bad rows are not yet visible (nor its
    record); the next ingest registers them, read from its record."""
    _run("ingest", str(files["first"]), "--db", spark)

    def cut(self: Landing, ingest_id: int) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Landing, "bookkeep", cut)
        _said("ingest", str(files["skip"]), "--on-error", "skip", "--db", spark, code=130)
    assert _rejected(spark) == {}
    assert _run("rejects", "--db", spark).stderr == "no rejected rows\n"
    duck = str(tmp_path / "s.duckdb")
    for db in (duck, spark):
        if db == duck:
            _run("ingest", str(files["first"]), "--db", db)
            _run("ingest", str(files["skip"]), "--on-error", "skip", "--db", db)
        _run("ingest", str(files["last"]), "--db", db)
    assert _rejected(spark) == {"ingest_id=2": REJECTED + CONFLICTS}
    listed = [_run("rejects", "--json", "--db", db).stdout for db in (duck, spark)]
    assert listed[0] == listed[1]
    assert _records(duck) == _records(spark)


@pytest.mark.spark
def test_a_store_made_before_rejected_rows_lists_none(
    spark: str, files: dict[str, Path], tmp_path: Path
) -> None:
    """... and the next skip ingest makes the table; its JSON summary is DuckDB's."""
    from pyspark.sql.connect.session import SparkSession

    _run("ingest", str(files["first"]), "--db", spark)
    session = SparkSession.builder.remote(spark).create()
    try:
        session.sql("DROP TABLE rejected_rows").collect()
    finally:
        session.stop()
    assert _run("rejects", "--db", spark).stderr == "no rejected rows\n"
    duck = str(tmp_path / "s.duckdb")
    _run("ingest", str(files["first"]), "--db", duck)
    skip = ["ingest", str(files["skip"]), "--on-error", "skip", "--json", "--db"]
    docs = [_summary(_run(*skip, db).stdout) for db in (duck, spark)]
    assert docs[0] == docs[1]
    assert (docs[1][0]["status"], len(docs[1][0]["errors"])) == ("partial", 5)
    assert _rejected(spark) == {"ingest_id=2": REJECTED + CONFLICTS}


# -- ABEVAL_SPARK_UPLOAD (no cluster) ------------------------------------------


@pytest.mark.parametrize(
    ("value", "mode"), [("", "auto"), ("auto", "auto"), ("connect", "connect")]
)
def test_the_documented_upload_values(
    monkeypatch: pytest.MonkeyPatch, value: str, mode: str
) -> None:
    monkeypatch.setenv(UPLOAD_ENV, value)
    assert upload_mode() == mode
    monkeypatch.delenv(UPLOAD_ENV)
    assert upload_mode() == "auto"


@pytest.mark.parametrize("value", ["conect", "Connect", "here", " connect"])
def test_another_upload_value_stops_the_ingest_before_it_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """No server listens at the URL: a connection would fail with another line
    (and only after its retries)."""
    from abeval.store.backends.spark import database as store

    monkeypatch.setenv(UPLOAD_ENV, value)
    tried: list[str] = []
    monkeypatch.setattr(store, "_first_contact", lambda session: tried.append("!") or set())
    events = tmp_path / "events.csv"
    write_events(SimulationConfig(users=5, seed=1, days=1, pre_period_days=0), events)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, ["ingest", str(events), "--db", "sc://127.0.0.1:1"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: ABEVAL_SPARK_UPLOAD={value!r} is not a way to upload; give "
        "ABEVAL_SPARK_UPLOAD=connect (send the rows through Spark Connect) or auto, or "
        "leave it unset (write them here when the cluster reads this machine's folders)\n"
    )
    assert tried == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
