"""Writing a simulation to a file, block by block (the next block is simulated
while this one is written): CSV (optionally gzip'd), Parquet or JSON Lines,
chosen by the file's name."""

from __future__ import annotations

import gzip
import itertools
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeVar, cast

import pyarrow as pa
import pyarrow.compute as pc

from abeval.files import split_name
from abeval.simulate.config import SimulationConfig
from abeval.simulate.events import ROWS_PER_BLOCK, iter_event_batches
from abeval.store.quoting import quote_literal

FORMATS: tuple[str, ...] = ("csv", "csv.gz", "parquet", "jsonl")
EventFormat = Literal["csv", "csv.gz", "parquet", "jsonl"]
T = TypeVar("T")

#: The suffixes the writer names its formats by: fewer than ingest reads, as the
#: CSV written is comma-separated (not ``.tsv``, ``.txt``) and JSON Lines is
#: named as such (not ``.json``).
_WRITTEN_SUFFIXES = (".csv", ".parquet", ".pq", ".jsonl", ".ndjson")


def format_of(path: str | Path) -> EventFormat:
    """The file format named by a path's extension (gzip'd CSV is ``csv.gz``)."""
    name = Path(path).name
    stem, fmt, compression = split_name(name)
    suffix = name[len(stem) : len(name) - len(compression or "")].lower()
    if fmt is not None and suffix in _WRITTEN_SUFFIXES:
        kind = fmt + (compression or "")
        if kind in FORMATS:
            return cast(EventFormat, kind)
    raise ValueError(f"cannot tell the format of {path}: use .csv, .csv.gz, .parquet or .jsonl")


def _iso_timestamps(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """``ts`` as ISO 8601 UTC text (``2025-03-03T08:00:00.000Z``) for text formats."""
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    i = table.schema.get_field_index("ts")
    if i < 0 or not pa.types.is_timestamp(table.schema.field(i).type):
        return table
    ts = table.column(i)
    naive = ts.cast(pa.timestamp(ts.type.unit))  # same instant, formatted without a zone
    text = pc.utf8_replace_slice(pc.cast(naive, pa.string()), 10, 11, "T")
    text = pc.binary_join_element_wise(text, "Z", "")
    return table.set_column(i, pa.field("ts", pa.string(), nullable=False), text)


def _batches(source: SimulationConfig | pa.Table) -> Iterator[pa.Table]:
    if isinstance(source, SimulationConfig):
        yield from iter_event_batches(source)
    else:
        for batch in source.to_batches(max_chunksize=ROWS_PER_BLOCK):
            yield pa.Table.from_batches([batch], schema=source.schema)


def _prefetch(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``items``, produced in a background thread up to ``depth`` ahead: numpy and
    Arrow release the GIL, so simulating the next block overlaps writing this one."""
    channel: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(message: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                channel.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:
            put(("error", exc))

    worker = threading.Thread(target=produce, name="abeval-simulate", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = channel.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        worker.join()


def write_events(
    source: SimulationConfig | pa.Table,
    path: str | Path,
    format: EventFormat | None = None,
    *,
    quote: bool | None = None,
) -> int:
    """Write a simulation (simulated block by block, never all in memory) or a
    table to ``path``, in the format its extension names unless ``format`` is
    given. Timestamps are ISO 8601 UTC text in CSV and JSON Lines, and
    ``timestamp[ms, UTC]`` in Parquet. CSV strings are quoted when needed
    (``quote``; None: never for a simulation whose labels need no quotes, else
    always); unquoted, a value that would need quotes is refused rather than
    written broken. Returns the number of rows written."""
    fmt = format or format_of(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        return _write_parquet(_prefetch(_batches(source)), path)
    text = _prefetch(_iso_timestamps(batch) for batch in _batches(source))
    if fmt == "jsonl":
        return _write_jsonl(text, path)
    # Strings are quoted only when needed: the generator's own ids never need it, so
    # a simulation is written unquoted unless one of the configured labels needs quotes.
    if quote is None:
        quote = not isinstance(source, SimulationConfig) or needs_quotes(labels_of(source))
    return _write_csv(text, path, compress=fmt == "csv.gz", quote=quote)


def needs_quotes(labels: list[str]) -> bool:
    """Whether any of these strings needs quotes in CSV."""
    return any(set(label) & set(',"\r\n') for label in labels)


def labels_of(config: SimulationConfig) -> list[str]:
    """The configured strings a simulation writes: experiment, arms, segment
    columns and values."""
    labels = [config.experiment, *config.arms, *config.segments]
    for values in config.segments.values():
        labels += list(values)
    return labels


def _write_csv(batches: Iterator[pa.Table], path: Path, compress: bool, quote: bool) -> int:
    with path.open("wb") as raw:
        if not compress:
            return _write_csv_to(batches, raw, quote)
        # Python's gzip at level 6 (gzip's default) is twice as fast as Arrow's level 9;
        # mtime 0 and no name keep the output byte-for-byte reproducible
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz:
            return _write_csv_to(batches, gz, quote)


def _write_csv_to(batches: Iterator[pa.Table], sink: IO[bytes] | gzip.GzipFile, quote: bool) -> int:
    """CSV with a plain header; strings quoted (``quote``) or never quoted (Arrow then
    refuses a value that would need quotes rather than write a broken file)."""
    import pyarrow.csv as csv

    rows = 0
    style = "needed" if quote else "none"
    options = csv.WriteOptions(quoting_style=style, include_header=False)
    writer: csv.CSVWriter | None = None
    for table in batches:
        if writer is None:
            # Arrow quotes every header name; write a plain header (the names are simple)
            sink.write((",".join(table.column_names) + "\n").encode())
            writer = csv.CSVWriter(sink, table.schema, write_options=options)
        writer.write_table(table)
        rows += table.num_rows
    if writer is not None:
        writer.close()
    return rows


def _write_parquet(batches: Iterator[pa.Table], path: Path) -> int:
    import pyarrow.parquet as pq

    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for table in batches:
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema, compression="zstd")
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    return rows


def _write_jsonl(batches: Iterator[pa.Table], path: Path) -> int:
    """JSON Lines through DuckDB's writer, streaming the batches (one object a line).
    The batches' timestamps are already text."""
    import duckdb

    texts = iter(batches)
    first = next(texts, None)
    if first is None:
        path.write_bytes(b"")
        return 0
    rows = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for table in itertools.chain([first], texts):
            rows += table.num_rows
            yield from table.to_batches()

    reader = pa.RecordBatchReader.from_batches(first.schema, counted())
    with duckdb.connect() as con:
        con.execute("SET preserve_insertion_order = true")
        con.register("events_source", reader)
        target = quote_literal(str(path))
        con.execute(f"COPY (SELECT * FROM events_source) TO {target} (FORMAT JSON)")
    return rows
