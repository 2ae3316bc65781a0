"""``abeval ingest --db sc://...`` on a standalone cluster: what DuckDB says, all or nothing.

Each test starts from an empty Spark store (abeval's tables dropped, a new
warehouse folder) and loads small files, so that every step is a few Spark
queries: the same file twice (the summary lines, the JSON summaries, the
experiments and the ingest records equal DuckDB's), a bad row (DuckDB's message,
the Spark tables as they were), a load interrupted before its commit (tables as
they were, the rerun loads) and one interrupted after it (the next ingest
finishes the record). The report on ingested data is compared in
test_spark_report.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from abeval.cli import app
from abeval.simulate import SimulationConfig, write_events
from abeval.store.backends.spark.landing import Landing

pytestmark = pytest.mark.spark
runner = CliRunner()
#: What only the clock changes in a summary line.
TIMING = re.compile(r"\(\d+\.\d+ s, [\d,]+ rows/s\)")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small experiment with what the notes speak of (a row repeated, spaces around
    an id, an event type in capitals, a timestamp years away), the same file with a
    bad row, and a second file of another experiment."""
    folder = tmp_path_factory.mktemp("ingest-files")
    good = folder / "events.csv"
    write_events(SimulationConfig(users=40, seed=2, days=1, pre_period_days=0), good)
    lines = good.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    caps = rows[1].split(",")
    caps[4], caps[9] = caps[4].upper(), caps[9] + "-caps"
    odd = [rows[0], ",".join(caps)]
    far = rows[2].split(",")
    far[3], far[9] = "2019-01-01T00:00:00Z", far[9] + "-far"
    spaced = rows[3].split(",")
    spaced[2], spaced[9] = f" {spaced[2]} ", spaced[9] + "-spaced"
    good.write_text("\n".join([header, *rows, *odd, ",".join(far), ",".join(spaced)]) + "\n")
    bad = folder / "bad.csv"
    broken = rows[5].split(",")
    broken[7] = "0"
    bad.write_text("\n".join([header, *rows[:5], ",".join(broken), *rows[6:]]) + "\n")
    other = folder / "other.csv"
    write_events(SimulationConfig(users=30, seed=4, days=1, pre_period_days=0), other)
    other.write_text(other.read_text().replace("home-reco-v2", "other-exp"))
    clash = folder / "clash.csv"  # other.csv's first rows, one with another user
    head, *kept = other.read_text().splitlines()[:9]
    moved = kept[4].split(",")
    moved[2] += "-moved"
    clash.write_text("\n".join([head, *kept[:4], ",".join(moved), *kept[5:]]) + "\n")
    return {"good": good, "bad": bad, "other": other, "clash": clash}


def _run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def _said(*args: str, code: int = 0) -> str:
    """The command's stderr with the timings taken out."""
    return TIMING.sub("(T)", _run(*args, code=code).stderr)


def _summary(doc: str) -> list[dict[str, Any]]:
    files = json.loads(doc)["files"]
    for f in files:
        del f["seconds"], f["rows_per_second"]
    return list(files)


def _records(db: str) -> list[tuple[Any, ...]]:
    """The ingests rows but their times, from either store."""
    from sqlalchemy import text

    from abeval.store import open_store

    with open_store(db, read_only=True) as store, store.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT ingest_id, source, format, size_bytes, checksum, rows_read, "
                "rows_inserted, rows_duplicate, rows_rejected, status FROM ingests "
                "ORDER BY ingest_id"
            )
        ).fetchall()
    return [tuple(r) for r in rows]


def _state(url: str) -> dict[str, Any]:
    """What a reader of the Spark store sees: partitions, rows and the experiments."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:
        names = {r[1] for r in session.sql("SHOW TABLES").collect()}
        out: dict[str, Any] = {"tables": sorted(names)}
        for table in ("events", "ingests"):
            if table in names:
                out[table] = (
                    sorted(r[0] for r in session.sql(f"SHOW PARTITIONS {table}").collect()),
                    session.sql(f"SELECT COUNT(*) FROM {table}").collect()[0][0],
                )
        if "experiments" in names:
            rows = session.sql("SELECT * FROM experiments ORDER BY experiment").collect()
            out["experiments"] = [tuple(r) for r in rows]
        return out
    finally:
        session.stop()


@pytest.mark.parametrize("upload", ["auto", "connect"])
def test_the_same_file_twice_reads_as_on_duckdb(
    spark: str,
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    upload: str,
) -> None:
    """The rows written as Parquet by abeval (the cluster sees this machine's
    folders), or sent through Spark Connect (ABEVAL_SPARK_UPLOAD=connect)."""
    monkeypatch.setenv("ABEVAL_SPARK_UPLOAD", upload)
    duck = str(tmp_path / "s.duckdb")
    good = str(files["good"])
    first = [_said("ingest", good, "--db", db) for db in (duck, spark)]
    assert first[0] == first[1]
    assert "1 repeated in the file" in first[0] and "more than 365 days" in first[0]
    assert "trimmed" in first[0] and "lower-cased" in first[0]
    again = [_said("ingest", good, "--db", db) for db in (duck, spark)]
    assert again[0] == again[1]
    assert " 0 inserted" in again[0]
    docs = [_summary(_run("ingest", good, "--json", "--db", db).stdout) for db in (duck, spark)]
    assert docs[0] == docs[1]
    assert docs[0][0]["already_stored"] == docs[0][0]["rows_read"]
    shown = [json.loads(_run("experiments", "--json", "--db", db).stdout) for db in (duck, spark)]
    assert shown[0] == shown[1] and len(shown[0]) == 1
    assert _records(duck) == _records(spark)
    assert [r[6] for r in _records(spark)] == [docs[0][0]["rows_read"] - 1, 0, 0]
    written = sorted(p.name for p in (tmp_path / "warehouse/events/ingest_id=1").glob("*.parquet"))
    assert (written == ["part-00000-abeval1.parquet"]) == (upload == "auto"), written


def test_a_bad_row_fails_the_file_and_leaves_spark_as_it_was(
    spark: str, files: dict[str, Path], tmp_path: Path
) -> None:
    duck = str(tmp_path / "s.duckdb")
    for db in (duck, spark):
        _run("ingest", str(files["other"]), "--db", db)
    before = _state(spark)
    said = [_said("ingest", str(files["bad"]), "--db", db, code=1) for db in (duck, spark)]
    assert said[0] == said[1]
    assert said[0].startswith(f"Error: {files['bad']}:7:position: position must be a whole")
    assert "nothing was loaded from this file" in said[0]
    assert _state(spark) == before
    assert before["events"][0] == ["ingest_id=1"]
    said = [_said("ingest", str(files["clash"]), "--db", db, code=1) for db in (duck, spark)]
    assert said[0] == said[1]
    assert said[0].startswith(f"Error: {files['clash']}:6:event_id: event_id '")
    assert "is already in the store (ingest 1) with different content" in said[0]
    assert _state(spark) == before


def test_a_load_interrupted_before_its_commit_leaves_spark_as_it_was(
    spark: str, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _run("ingest", str(files["other"]), "--db", spark)
    before = _state(spark)

    def cut(self: Landing) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Landing, "commit", cut)
        said = _said("ingest", str(files["good"]), "--db", spark, code=130)
    assert said == f"Interrupted: nothing from {files['good']} was loaded\n"
    assert _state(spark) == before
    _run("ingest", str(files["good"]), "--db", spark)
    after = _state(spark)
    assert after["events"][0] == ["ingest_id=1", "ingest_id=2"]
    assert after["ingests"][0] == after["events"][0]
    assert [r[0] for r in after["experiments"]] == ["home-reco-v2", "other-exp"]


def test_bookkeeping_cut_short_is_finished_by_the_next_ingest(
    spark: str, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(Landing, "bookkeep", lambda self, ingest_id: _interrupt())
        said = _said("ingest", str(files["good"]), "--db", spark, code=130)
    assert said == (
        f"Interrupted: the rows of {files['good']} were loaded (ingest 1); the next abeval "
        "ingest completes its record\n"
    )
    half = _state(spark)
    assert half["events"][0] == ["ingest_id=1"] and half["ingests"] == ([], 0)
    duck = str(tmp_path / "s.duckdb")
    for db in (duck, spark):
        _run("ingest", str(files["good"]), "--db", db)
        _run("ingest", str(files["other"]), "--db", db)
    shown = [json.loads(_run("experiments", "--json", "--db", db).stdout) for db in (duck, spark)]
    assert shown[0] == shown[1] and len(shown[0]) == 2
    inserted = [r[6] for r in _records(duck)]
    assert [(r[0], r[6]) for r in _records(spark)] == [(1, inserted[0]), (2, 0), (3, inserted[1])]


def _interrupt() -> None:
    raise KeyboardInterrupt
