"""A text file's bytes as Python reads them, for what DuckDB's readers cannot do:
tell a byte-order mark or an encoding from the first bytes, read a header line
that is not valid UTF-8, drop the byte-order mark DuckDB's JSON reader does not
skip, and index the lines of a file that holds bytes that are not UTF-8 (the
text reader DuckDB gives stops there).

Lines are split at ``\\n`` with a trailing ``\\r`` removed, as DuckDB's readers
split them; a line that is not valid UTF-8 is decoded with U+FFFD in place of
the bad bytes and flagged.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

UTF8_BOM = b"\xef\xbb\xbf"
#: The longest line a CSV row may be (DuckDB's reader's ``max_line_size``).
MAX_LINE_BYTES = 2_000_000
_BATCH = 100_000
_SCAN_CHUNK = 1 << 24


def long_lines(path: Path, limit: int = MAX_LINE_BYTES) -> list[tuple[int, int]]:
    """``(line, bytes)`` of every physical line of ``path`` longer than ``limit``
    bytes (line break excluded), in one pass over its bytes (decompressed for
    ``.gz``). DuckDB's CSV reader drops a line longer than about 32 MiB without a
    word, and its JSON reader stops the whole file at one over 16 MiB: this pass
    is how every such line is accounted for. A plain file that
    :func:`_may_hold_long_line` clears (one page read per ``limit`` bytes) is not
    read at all."""
    if not path.name.lower().endswith(".gz") and not _may_hold_long_line(path, limit):
        return []  # without numpy's import: a tenth of a second of every ingest
    import numpy as np

    found: list[tuple[int, int]] = []
    line, carried = 1, 0  # the line being read, and its bytes in earlier chunks
    with open_bytes(path) as f:
        while chunk := f.read(_SCAN_CHUNK):
            breaks = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
            if not len(breaks):
                carried += len(chunk)
                continue
            lengths = np.diff(breaks, prepend=-1) - 1
            lengths[0] += carried
            found += [(line + int(i), int(lengths[i])) for i in np.flatnonzero(lengths > limit)]
            line += len(breaks)
            carried = len(chunk) - int(breaks[-1]) - 1
    if carried > limit:
        found.append((line, carried))
    return found


def open_bytes(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed when its name ends in ``.gz``."""
    if path.name.lower().endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def _may_hold_long_line(path: Path, limit: int) -> bool:
    """Whether the plain file ``path`` may hold a line longer than ``limit``
    bytes; "no" is always right.

    From the start of a line, the last line break within the next ``limit + 1``
    bytes starts the next line to look from; a stretch of ``limit + 1`` bytes
    without one holds (part of) a long line. Each step reads one page or so at
    the end of a stretch of the mapped file, so a file of short lines is
    answered after size / ``limit`` steps without reading it."""
    import mmap

    size = path.stat().st_size
    if size <= limit:
        return False
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        start = 0  # the start of a line
        while size - start > limit:
            brk = m.rfind(b"\n", start, start + limit + 1)
            if brk < 0:
                return True
            start = brk + 1
    return False


def can_read(path: Path) -> bool:
    """Whether Python can read the file's text (plain or gzip; not zstd)."""
    return not path.name.lower().endswith(".zst")


def first_line(path: Path) -> bytes:
    """The first line's bytes (without the line break, at most
    :data:`MAX_LINE_BYTES` + 1 of them); raises OSError or EOFError."""
    with open_bytes(path) as f:
        line = f.readline(MAX_LINE_BYTES + 1)
    return line.rstrip(b"\n").rstrip(b"\r")


def starts_with_bom(path: Path) -> bool:
    """Whether the file starts with the UTF-8 byte-order mark."""
    if not can_read(path):
        return False
    try:
        with open_bytes(path) as f:
            return f.read(3) == UTF8_BOM
    except (OSError, EOFError):
        return False


@contextlib.contextmanager
def without_bom(path: Path) -> Iterator[Path]:
    """``path``, or a temporary copy without its leading byte-order mark (and
    decompressed) for a reader that does not skip one; the lines are the same."""
    if not starts_with_bom(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="abeval-") as tmp:
        copy = Path(tmp) / "nobom.jsonl"
        with open_bytes(path) as src, copy.open("wb") as out:
            src.read(3)
            shutil.copyfileobj(src, out, 1 << 22)
        yield copy


def iter_lines(path: Path) -> Iterator[tuple[str | None, bool]]:
    """Every physical line as ``(text, valid_utf8)``; a blank line is None; the
    first line loses a leading byte-order mark."""
    with open_bytes(path) as f:
        for i, raw in enumerate(f):
            line = raw.rstrip(b"\n").rstrip(b"\r")
            if i == 0 and line.startswith(UTF8_BOM):
                line = line[3:]
            try:
                yield (line.decode("utf-8") or None), True
            except UnicodeDecodeError:
                yield line.decode("utf-8", errors="replace"), False


def load_lines(duck: Any, path: Path, table: str) -> None:
    """Create temporary ``table(l VARCHAR, bad_utf8 BOOLEAN)``: one row per
    physical line of ``path``, in file order (insert order on one thread)."""
    import pyarrow as pa

    duck.execute(f"CREATE OR REPLACE TEMP TABLE {table} (l VARCHAR, bad_utf8 BOOLEAN)")
    texts: list[str | None] = []
    flags: list[bool] = []

    def flush() -> None:
        batch = pa.table({"l": pa.array(texts, pa.string()), "bad_utf8": pa.array(flags)})
        duck.register("abeval_lines_batch", batch)
        try:
            duck.execute(f"INSERT INTO {table} SELECT l, bad_utf8 FROM abeval_lines_batch")
        finally:
            duck.unregister("abeval_lines_batch")
        texts.clear()
        flags.clear()

    for text, ok in iter_lines(path):
        texts.append(text)
        flags.append(not ok)
        if len(texts) >= _BATCH:
            flush()
    if texts:
        flush()


def sample_lines(path: Path, limit: int) -> list[str]:
    """The first ``limit`` non-blank lines, as text (bad bytes replaced)."""
    out: list[str] = []
    for text, _ok in iter_lines(path):
        if text is not None and text.strip():
            out.append(text)
            if len(out) >= limit:
                break
    return out


def mixed_line_endings(path: Path) -> bool:
    """Whether some lines end in ``\\r\\n`` and others in a bare ``\\n`` (a file
    pasted together from two systems), which DuckDB's CSV reader refuses."""
    if not can_read(path):
        return False
    crlf = lf = 0
    carried = b""
    with open_bytes(path) as f:
        while chunk := f.read(1 << 22):
            chunk = carried + chunk
            carried = chunk[-1:] if chunk.endswith(b"\r") else b""
            body = chunk[:-1] if carried else chunk
            both = body.count(b"\n")
            crlf += body.count(b"\r\n")
            lf += both - body.count(b"\r\n")
            if crlf and lf:
                return True
    return False


@contextlib.contextmanager
def unix_line_endings(path: Path) -> Iterator[Path]:
    """A temporary copy of ``path`` (decompressed) with every ``\\r\\n`` made
    ``\\n``: the same lines, which DuckDB's reader then reads."""
    with tempfile.TemporaryDirectory(prefix="abeval-") as tmp:
        copy = Path(tmp) / "lf.csv"
        carried = b""
        with open_bytes(path) as src, copy.open("wb") as out:
            while chunk := src.read(1 << 22):
                chunk = carried + chunk
                carried = chunk[-1:] if chunk.endswith(b"\r") else b""
                out.write((chunk[:-1] if carried else chunk).replace(b"\r\n", b"\n"))
            out.write(carried)
        yield copy
