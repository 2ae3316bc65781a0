"""Every row accounted, truncation named (issue 38, item 4): a compressed event
file cut short or damaged is one line naming the file, the byte where it ends and
the last whole line read; nothing is loaded, and the API raises
:class:`abeval.errors.DamagedFile`. (DuckDB's readers loaded the rows before the
cut with exit 0, and a cut gzip file printed only ``Aborted!``.) With
``--on-error skip`` the lines before the cut are loaded and counted: see
tests/store/test_compressed_inputs.py."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.errors import DamagedFile

runner = CliRunner()
ROWS = 60_000
TEXT = (
    "experiment,arm,user_id,ts,event_type\n"
    + "".join(f"x,{'ab'[i % 2]},u{i},2024-05-01T00:00:00,exposure\n" for i in range(ROWS))
).encode()


def _compressed(tmp: Path, codec: str) -> Path:
    if codec == "gzip":
        path = tmp / "events.csv.gz"
        path.write_bytes(gzip.compress(TEXT))
    else:
        path = tmp / "events.csv.zst"
        with pa.CompressedOutputStream(pa.OSFile(str(path), "wb"), "zstd") as out:
            out.write(TEXT)
    return path


def _gzip_prefix_lines(data: bytes) -> int:
    """The whole lines a truncated gzip stream gives, by zlib's own decompressor."""
    text = zlib.decompressobj(wbits=31).decompress(data)
    return text.count(b"\n")


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
@pytest.mark.parametrize("keep", [0.3, 0.5, 0.95])
@pytest.mark.parametrize("on_error", ["abort"])
def test_a_cut_compressed_file_is_one_line_and_loads_nothing(
    tmp_path: Path, codec: str, keep: float, on_error: str
) -> None:
    whole = _compressed(tmp_path, codec)
    data = whole.read_bytes()
    cut = tmp_path / f"cut{''.join(whole.suffixes)}"
    cut.write_bytes(data[: int(len(data) * keep)])
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", str(cut), "--db", db, "--on-error", on_error])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    size = int(len(data) * keep)
    assert lines[0].startswith(f"Error: {cut}: the {codec} stream ends at byte {size:,} ")
    said = int(re.search(r"after line ([\d,]+)", lines[0]).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert 0 < said < ROWS + 1
    if codec == "gzip":
        true = _gzip_prefix_lines(data[:size])
        assert true - (1 << 16) // 40 <= said <= true  # within 64 KiB of ~40-byte lines
    with abeval.open(db) as store:
        with pytest.raises(DamagedFile) as caught:
            store.ingest(cut, on_error=on_error)
        assert caught.value.size == size and caught.value.line == said
        assert caught.value.file == str(cut)
        assert list(store.experiments()) == []  # nothing loaded


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_damaged_compressed_data_is_named(tmp_path: Path, codec: str) -> None:
    whole = _compressed(tmp_path, codec)
    data = bytearray(whole.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # zeros over the compressed data
    bad = tmp_path / f"bad{''.join(whole.suffixes)}"
    bad.write_bytes(bytes(data))
    result = runner.invoke(app, ["ingest", str(bad), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {bad}: the {codec} stream ") and "truncated or damaged" in line


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_whole_compressed_file_loads_every_row(tmp_path: Path, codec: str) -> None:
    with abeval.open(str(tmp_path / "s.duckdb")) as store:
        summary = store.ingest(_compressed(tmp_path, codec))
    assert summary.inserted == ROWS
