"""evaluate's readers of compressed files give the ingest's one line for a cut
file (issue 38, item 4, the rest): a truth cut halfway through its zstd stream
was read up to the cut, with exit 0 and a quarter of its users."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pytest
from ingest_store import run

USERS = 50_000
TEXT = b"user_id,item_id\n" + b"".join(b"u%d,i%d\n" % (i, i) for i in range(USERS))


def cut_file(tmp: Path, codec: str) -> Path:
    path = tmp / ("truth.csv.gz" if codec == "gzip" else "truth.csv.zst")
    with pa.CompressedOutputStream(pa.OSFile(str(path), "wb"), codec) as out:
        out.write(TEXT)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_cut_truth_is_one_line(tmp_path: Path, codec: str) -> None:
    truth = cut_file(tmp_path, codec)
    lists = tmp_path / "run.csv"
    with lists.open("w", newline="") as f:
        csv.writer(f).writerows([["user_id", "item_id", "rank"], ["u1", "i1", 1]])
    out = tmp_path / "out.json"
    result = run("evaluate", "-t", str(truth), "-r", str(lists), "-f", "json", "-o", str(out))
    assert result.exit_code == 1, result.output
    size = truth.stat().st_size
    assert result.stderr.startswith(
        f"Error: {truth}: the {codec} stream ends at byte {size:,} before its end marker, "
        "after line "
    ), result.stderr
    assert result.stderr.endswith("the file is truncated or damaged; copy or download it again\n")
    assert result.stderr.count("\n") == 1
    assert not out.exists()
