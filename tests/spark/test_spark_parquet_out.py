"""Rows written as Parquet by abeval itself for a Spark ingest, in bounded chunks
(abeval.store.backends.spark.parquet_out), and the landing's choice between that and the
upload through Spark Connect. No cluster: the files are read back with pyarrow,
and the cluster's count is a stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from abeval.store.backends.spark import parquet_out
from abeval.store.backends.spark.landing import Landing
from abeval.store.backends.spark.parquet_out import (
    UPLOAD_ENV,
    arrow_schema,
    local_folder,
    write_parquet,
)
from abeval.store.backends.spark.schema import COLUMNS as COLUMNS_OF
from abeval.store.backends.spark.schema import data_columns

COLUMNS = [("a", "STRING"), ("n", "INT"), ("b", "BIGINT"), ("x", "DOUBLE"), ("t", "TIMESTAMP_NTZ")]


def _batches(sizes: list[int]) -> Iterator[pa.RecordBatch]:
    """Batches as DuckDB hands them over (its own types: int64 for n, a zone-less
    microsecond timestamp), numbered rows across batches."""
    start = 0
    for size in sizes:
        k = list(range(start, start + size))
        yield pa.record_batch(
            {
                "a": [f"r{i}" for i in k],
                "n": pa.array(k, pa.int64()),
                "b": pa.array([i * 10**10 for i in k], pa.int64()),
                "x": [i / 4 for i in k],
                "t": pa.array([datetime(2026, 1, 1, 0, 0, i % 60) for i in k], pa.timestamp("us")),
            }
        )
        start += size


def test_a_folder_is_local_only_when_its_parent_is_here_and_writable(tmp_path: Path) -> None:
    table = tmp_path / "events"
    table.mkdir()
    part = table / "ingest_id=3"
    assert local_folder(str(part)) == part
    assert local_folder(f"file:{part}") == part
    assert local_folder(f"file://{part}") == part
    assert local_folder(f"file://localhost{part}") == part
    # the table's folder not made yet (Spark makes it at its first write)
    assert local_folder(str(tmp_path / "new" / "ingest_id=3")) == tmp_path / "new" / "ingest_id=3"
    assert (
        local_folder(str(tmp_path / "a" / "b" / "ingest_id=3"))
        == tmp_path / "a" / "b" / "ingest_id=3"
    )
    assert local_folder("/nowhere-abeval/events/ingest_id=3") is None  # only / exists
    for remote in (f"hdfs://nn:8020{part}", f"s3a://bucket{part}", f"file://otherhost{part}"):
        assert local_folder(remote) is None
    assert local_folder("relative/ingest_id=3") is None
    table.chmod(0o500)
    try:
        import os

        if os.geteuid() != 0:  # root writes anywhere
            assert local_folder(str(part)) is None
    finally:
        table.chmod(0o700)


def test_rows_are_written_in_files_of_bounded_size_with_the_tables_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet_out, "FILE_ROWS", 5)
    folder = tmp_path / "ingest_id=1"
    folder.mkdir()
    (folder / "part-old.parquet").write_text("left by an interrupted load")
    schema = arrow_schema(COLUMNS)
    assert write_parquet(_batches([3, 3, 4, 1]), folder, schema, "abeval1") == 11
    names = sorted(p.name for p in folder.iterdir())
    # a file is closed once it holds FILE_ROWS rows or more: 3+3, then 4+1
    assert names == ["part-00000-abeval1.parquet", "part-00001-abeval1.parquet"]
    assert [pq.read_metadata(folder / n).num_rows for n in names] == [6, 5]
    got = pq.read_table(folder)
    assert got.schema.types == [
        pa.string(),
        pa.int32(),
        pa.int64(),
        pa.float64(),
        pa.timestamp("us"),
    ]
    assert got.column("a").to_pylist() == [f"r{i}" for i in range(11)]
    assert got.column("n").to_pylist() == list(range(11))
    assert got.column("b").to_pylist() == [i * 10**10 for i in range(11)]
    assert got.column("x").to_pylist() == [i / 4 for i in range(11)]
    assert got.column("t").to_pylist()[7] == datetime(2026, 1, 1, 0, 0, 7)


def test_no_rows_are_one_empty_file(tmp_path: Path) -> None:
    folder = tmp_path / "ingest_id=2"
    schema = arrow_schema(COLUMNS)
    assert write_parquet(iter([]), folder, schema, "abeval2") == 0
    files = list(folder.iterdir())
    assert len(files) == 1 and pq.read_table(files[0]).schema == schema
    assert pq.read_metadata(files[0]).num_rows == 0


class _Reader:
    def __init__(self, count: int | None) -> None:
        self.count_ = count

    def parquet(self, path: str) -> Any:
        if self.count_ is None:
            raise RuntimeError(f"[PATH_NOT_FOUND] Path does not exist: {path}.")
        reader = self

        class Frame:
            def count(self) -> int:
                assert reader.count_ is not None
                return reader.count_

        return Frame()


class _Session:
    """What the upload asks of Spark: the rows it finds in a folder."""

    def __init__(self, count: int | None) -> None:
        self.read = _Reader(count)


def _landing(count: int | None, sent: list[int]) -> Landing:
    landing = Landing.__new__(Landing)
    landing.session = _Session(count)
    landing.ingest_id = 4

    def send(batches: Iterator[Any], to: str, table: str) -> None:
        sent.append(sum(b.num_rows for b in batches))

    landing._send = send  # type: ignore[method-assign]
    return landing


@contextmanager
def _rows() -> Iterator[Iterator[pa.RecordBatch]]:
    """Two batches (2 and 5 rows) of events' data columns, all null."""
    schema = arrow_schema([c for c in COLUMNS_OF["events"] if c[0] in data_columns("events")])
    yield iter(
        pa.record_batch([pa.nulls(n, f.type) for f in schema], schema=schema) for n in (2, 5)
    )


@pytest.mark.parametrize(
    ("found", "forced", "local_files", "sent"),
    [
        (7, "", 1, []),  # the cluster finds every row written here: done
        (6, "", 0, [7]),  # it finds another count: sent through Connect instead
        (None, "", 0, [7]),  # it does not see the folder at all: the same
        (7, "connect", 0, [7]),  # ABEVAL_SPARK_UPLOAD=connect: never written here
    ],
)
def test_the_upload_writes_here_only_when_the_cluster_reads_every_row_there(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    found: int | None,
    forced: str,
    local_files: int,
    sent: list[int],
) -> None:
    monkeypatch.setenv(UPLOAD_ENV, forced)
    (tmp_path / "events").mkdir()
    to = tmp_path / "events" / "ingest_id=4"
    did: list[int] = []
    _landing(found, did).upload(_rows, f"file:{to}")
    assert did == sent
    assert (len(list(to.iterdir())) if to.exists() else 0) == local_files


def test_connect_chunks_are_bounded_in_bytes_and_keep_every_row_in_order() -> None:
    from abeval.store.backends.spark.landing import _chunks

    text = pa.array([f"row {i:060d}" for i in range(10_000)])
    batches = [pa.record_batch([text], names=["s"]), pa.record_batch([text[:7]], names=["s"])]
    most = 50_000  # 10,000 rows of about 70 bytes: about 700 kB
    chunks = list(_chunks(iter(batches), most=most))
    assert all(0 < c.nbytes <= most for c in chunks)
    assert len(chunks) >= sum(b.nbytes for b in batches) // most
    rows = [s for c in chunks for s in c.column("s").to_pylist()]
    assert rows == text.to_pylist() + text[:7].to_pylist()
    wide = pa.record_batch([pa.array(["x" * 100])], names=["s"])
    assert [c.num_rows for c in _chunks(iter([wide, wide]), most=10)] == [1, 1]


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


@pytest.mark.parametrize("before", [{}, {"spark.connect.session.planCache.enabled": "true"}])
def test_the_plan_cache_is_off_during_an_upload_and_as_it_was_after(
    before: dict[str, str],
) -> None:
    from abeval.store.backends.spark.landing import PLAN_CACHE, _no_plan_cache

    session = type("Session", (), {"conf": _Conf(dict(before))})()
    with pytest.raises(KeyboardInterrupt), _no_plan_cache(session):
        assert session.conf.values[PLAN_CACHE] == "false"
        raise KeyboardInterrupt
    assert session.conf.values == before
