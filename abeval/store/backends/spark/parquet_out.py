"""The rows of an ingest written as Parquet by abeval itself, in bounded chunks,
when the client can write the folder the cluster reads (a ``file:`` warehouse on
this machine, or a folder both share).

DuckDB hands the checked rows over as Arrow record batches of a fixed size; each
batch is cast to the Spark table's column types and appended to the current
Parquet file, and a file is closed every :data:`FILE_ROWS` rows. At no time does
either side hold more than one batch (plus the Parquet writer's page buffers):
the Connect server's driver holds none of the file, whatever its size
(issue 23, item 5; benchmarks/RESULTS.md). The cluster is then asked to count the
rows it finds there, so that a folder the client wrote but the cluster does not
see (two machines, two different ``/data``) is caught before the commit, and the
upload goes through Spark Connect instead (:mod:`abeval.store.backends.spark.landing`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from abeval.errors import StoreError

#: How an ingest's rows reach the cluster: ``auto`` (also unset or empty, the
#: default) writes them here when the cluster reads this machine's folder and
#: sends them through Spark Connect otherwise; ``connect`` always sends them.
UPLOAD_ENV = "ABEVAL_SPARK_UPLOAD"
UPLOAD_MODES = ("auto", "connect")
#: Rows per Parquet file written here (about 60 MB of events).
FILE_ROWS = 1_000_000
#: The Arrow type of each Spark column type of abeval's tables
#: (abeval.store.backends.spark.types.SPARK_TYPES).
_ARROW = {
    "STRING": "string",
    "INT": "int32",
    "BIGINT": "int64",
    "DOUBLE": "float64",
    "TIMESTAMP_NTZ": "timestamp[us]",
}


def upload_mode() -> str:
    """:data:`UPLOAD_ENV`: ``auto`` or ``connect``; a :class:`StoreError` naming
    the variable, its value and the values it takes for any other value (checked
    when a writer opens a Spark store, before it connects)."""
    value = os.environ.get(UPLOAD_ENV, "")
    if value in ("", *UPLOAD_MODES):
        return value or "auto"
    raise StoreError(
        f"{UPLOAD_ENV}={value!r} is not a way to upload; give {UPLOAD_ENV}=connect (send the "
        "rows through Spark Connect) or auto, or leave it unset (write them here when the "
        "cluster reads this machine's folders)"
    )


def local_folder(uri: str) -> Path | None:
    """The folder of ``uri`` on this machine, if it is a ``file:`` URI (or a plain
    path) whose nearest existing ancestor (the table's folder or the warehouse,
    which Spark makes at its first write) is a folder other than the file
    system's root that this process may write in; else None."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file") or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        return None
    here = path.parent
    while not here.exists() and here.parent != here:
        here = here.parent
    if here.parent == here or not here.is_dir():
        return None
    return path if os.access(here, os.W_OK) else None


def arrow_schema(columns: list[tuple[str, str]]) -> Any:
    """The Arrow schema of Spark ``columns`` (name, Spark type)."""
    import pyarrow as pa

    return pa.schema([(name, pa.type_for_alias(_ARROW[kind])) for name, kind in columns])


def write_parquet(batches: Iterator[Any], folder: Path, schema: Any, name: str) -> int:
    """Replace what ``folder`` holds with the rows of the Arrow record ``batches``
    as Parquet files ``part-<k>-<name>.parquet`` of :data:`FILE_ROWS` rows at most
    (one empty file when there are none); return how many rows were written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if folder.exists():
        shutil.rmtree(folder)  # what an interrupted load left
    folder.mkdir(parents=True)
    written, in_file, k = 0, 0, 0
    writer = None
    try:
        for batch in batches:
            table = pa.Table.from_batches([batch]).cast(schema)
            if writer is None:
                writer = pq.ParquetWriter(folder / f"part-{k:05d}-{name}.parquet", schema)
            writer.write_table(table)
            written += table.num_rows
            in_file += table.num_rows
            if in_file >= FILE_ROWS:
                writer.close()
                writer, in_file, k = None, 0, k + 1
        if writer is None and written == 0:  # an empty partition still marks the ingest
            pq.write_table(schema.empty_table(), folder / f"part-00000-{name}.parquet")
    finally:
        if writer is not None:
            writer.close()
    return written
