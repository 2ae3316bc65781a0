"""Compressed event files of every kind a team keeps (issue 38, item 4): gzip and
zstd read by the engine, bzip2 and xz decompressed by abeval; a cut file refused in
one line, or with ``--on-error skip`` loaded up to the cut, said and counted.

The rows expected before a cut come from the standard library's own decompressors
run on the same bytes, not from abeval."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import subprocess
import sys
import zlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.errors import DamagedFile

runner = CliRunner()
ROWS = 60_000
HEADER = b"experiment,arm,user_id,ts,event_type\n"
TEXT = (
    HEADER
    + "".join(f"x,{'ab'[i % 2]},u{i},2024-05-01T00:00:00,exposure\n" for i in range(ROWS)).encode()
)
SUFFIX = {"gzip": ".gz", "zstd": ".zst", "bzip2": ".bz2", "xz": ".xz"}


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "bzip2":
        return bz2.compress(data)
    if codec == "xz":
        return lzma.compress(data)
    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, "zstd") as f:
        f.write(data)
    return bytes(out.getvalue().to_pybytes())


def _prefix_text(codec: str, data: bytes) -> bytes:
    """What the standard library's decompressor gives from a cut stream."""
    if codec == "gzip":
        return zlib.decompressobj(wbits=31).decompress(data)
    if codec == "bzip2":
        return bz2.BZ2Decompressor().decompress(data)
    return lzma.LZMADecompressor().decompress(data)


def _users(db: str) -> set[str]:
    con = duckdb.connect(db, read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT user_id FROM events").fetchall()}
    finally:
        con.close()


@pytest.mark.parametrize("codec", ["bzip2", "xz"])
def test_bzip2_and_xz_files_load_every_row(tmp_path: Path, codec: str) -> None:
    path = tmp_path / f"events.csv{SUFFIX[codec]}"
    path.write_bytes(_compress(codec, TEXT))
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", str(path), "--db", db])
    assert result.exit_code == 0, result.stderr
    assert f"{path}: {ROWS:,} rows read: {ROWS:,} inserted" in result.stderr
    assert len(_users(db)) == ROWS


@pytest.mark.parametrize("codec", ["bzip2", "xz"])
def test_a_cut_bzip2_or_xz_file_is_one_line_and_loads_nothing(tmp_path: Path, codec: str) -> None:
    data = _compress(codec, TEXT)
    cut = tmp_path / f"cut.csv{SUFFIX[codec]}"
    cut.write_bytes(data[: len(data) // 2])
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", str(cut), "--db", db])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {cut}: the {codec} stream ends at byte {len(data) // 2:,} ")
    assert "--on-error skip" in line
    with abeval.open(db) as store:
        with pytest.raises(DamagedFile):
            store.ingest(cut)
        assert list(store.experiments()) == []


@pytest.mark.parametrize("codec", ["gzip", "bzip2", "xz", "zstd"])
def test_skip_loads_the_whole_lines_before_the_cut_and_says_so(tmp_path: Path, codec: str) -> None:
    data = _compress(codec, TEXT)
    size = int(len(data) * 0.6)
    cut = tmp_path / f"cut.csv{SUFFIX[codec]}"
    cut.write_bytes(data[:size])
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", str(cut), "--db", db, "--on-error", "skip"])
    assert result.exit_code == 0, result.stderr
    said = re.search(r"([\d,]+) rows read: ([\d,]+) inserted", result.stderr)
    assert said is not None, result.stderr
    read, inserted = (int(g.replace(",", "")) for g in said.groups())
    assert read == inserted and 0 < read < ROWS
    assert f"the {codec} stream ends at byte {size:,} before its end marker" in result.stderr
    assert f"loaded the {read + 1:,} whole lines before the fault" in result.stderr  # + header
    # The rows loaded are the file's first rows, every one of them.
    assert _users(db) == {f"u{i}" for i in range(read)}
    if codec != "zstd":
        whole_lines = _prefix_text(codec, data[:size]).count(b"\n")
        if codec == "gzip":  # the engine's decompressor may stop up to a block earlier
            assert whole_lines - (1 << 16) // 30 <= read + 1 <= whole_lines
        else:
            assert read + 1 == whole_lines
    with abeval.open(str(tmp_path / "api.duckdb")) as store:
        summary = store.ingest(cut, on_error="skip")
    assert summary.status == "partial" and summary.lines_before_cut == read + 1
    assert summary.rows_read == summary.inserted == read


def test_standard_input_in_bzip2_is_told_by_its_first_bytes(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "abeval", "ingest", "-", "--input-format", "csv", "--db", str(db)],
        input=bz2.compress(TEXT),
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    assert len(_users(str(db))) == ROWS


@pytest.mark.parametrize("codec", ["bzip2", "xz"])
def test_evaluate_names_a_compression_it_does_not_read(tmp_path: Path, codec: str) -> None:
    truth = tmp_path / f"truth.csv{SUFFIX[codec]}"
    truth.write_bytes(_compress(codec, b"user_id,item_id,relevance\nu1,i1,1\n"))
    run = tmp_path / "run.csv"
    run.write_text("user_id,item_id,rank\nu1,i1,1\n")
    result = runner.invoke(app, ["evaluate", "--truth", str(truth), "-r", f"m={run}"])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"Error: {truth}: {codec}-compressed; `abeval evaluate` reads plain, gzip or zstd "
        f"files: decompress it first (`{codec} -dk {truth}`)"
    )
