"""Compressed event files: checked whole before a row is loaded, and read as text
where the engine's readers cannot.

DuckDB reads gzip and zstd itself but loads the rows before a cut in the stream
and says nothing, so :func:`check_compressed` decompresses such a file once
(without keeping the text) and refuses a cut or damaged one in one line. bzip2
and xz files, which no engine reader takes, are decompressed by Python into a
temporary copy (:func:`readable`) whose lines are the file's lines.

With ``--on-error skip`` a cut file is not refused: the whole lines before the
cut are loaded from a temporary copy, and the :class:`Cut` says where the file
ended and how many lines came before it, so the summary can count them.
"""

from __future__ import annotations

import bz2
import contextlib
import lzma
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from abeval.errors import DamagedFile
from abeval.files import split_name

#: The compression of an event file, by the end of its name, and its codec's name.
CODECS: dict[str, str] = {".gz": "gzip", ".zst": "zstd", ".bz2": "bzip2", ".xz": "xz"}
#: The codecs DuckDB's readers decompress themselves.
ENGINE_CODECS = ("gzip", "zstd")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Cut:
    """Where a compressed file's stream ended early: its size in bytes, the whole
    lines before the cut (which were loaded) and the bytes of the line cut in two
    (which were not)."""

    file: str
    codec: str
    size: int
    lines: int
    partial_bytes: int
    ended: bool  # the stream ends early (else its data is damaged)

    def note(self) -> str:
        """The summary's line for it."""
        lost = (
            f"; the {self.partial_bytes:,} bytes of the line cut in two were not loaded"
            if self.partial_bytes
            else ""
        )
        where = (
            f"ends at byte {self.size:,} before its end marker"
            if self.ended
            else f"is damaged after line {self.lines:,}"
        )
        return (
            f"the {self.codec} stream {where}: loaded the {self.lines:,} whole lines "
            f"before the fault{lost}; the rest of the file is lost (copy or download "
            "it again for every row)"
        )


def codec_of(path: Path) -> str | None:
    """The compression a file's name says (``gzip``, ``zstd``, ``bzip2``, ``xz``), or None."""
    compression = split_name(path)[2]
    return CODECS.get(compression) if compression else None


def _open(path: Path, codec: str) -> IO[bytes]:
    """The decompressed bytes of the whole file (Arrow's readers: gzip and zstd)."""
    import pyarrow as pa

    return cast(IO[bytes], pa.CompressedInputStream(pa.OSFile(str(path)), codec))


def _decompressor(codec: str) -> Any:
    if codec == "gzip":
        return zlib.decompressobj(wbits=31)
    if codec == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def _pieces(path: Path, codec: str) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` as they come, every byte before a fault
    included (the standard library's incremental decompressors, which keep nothing
    back; streams written one after another are read in turn). Raises EOFError when
    the file ends before its stream does."""
    if codec == "zstd":
        with _open(path, codec) as f:  # Arrow gives nothing of a chunk it cannot finish
            while chunk := f.read(1 << 16):
                yield chunk
        return
    d = _decompressor(codec)
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            while block:
                yield d.decompress(block)
                block = d.unused_data if d.eof else b""
                if block:
                    d = _decompressor(codec)
    if not d.eof:
        raise EOFError("the stream ends before its end-of-stream marker")


def _ended(exc: BaseException) -> bool:
    """Whether a decompressor's fault says the stream ended early (else: damaged)."""
    text = str(exc)
    return isinstance(exc, EOFError) or "runcated" in text or "end-of-stream" in text


def _damaged(
    path: Path, shown: Path, codec: str, lines: int, exc: BaseException, skip: bool = True
) -> DamagedFile:
    size = path.stat().st_size
    cut = _ended(exc)
    where = f"ends at byte {size:,} before its end marker" if cut else "is damaged"
    return DamagedFile(
        f"{shown}: the {codec} stream {where}, after line {lines:,} (nothing was "
        "loaded): the file is truncated or damaged; copy or download it again"
        + (", or pass --on-error skip to load the whole lines before the fault" if skip else ""),
        file=str(shown),
        line=lines,
        size=size,
    )


_FAULTS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)


def check_compressed(path: Path, shown: Path, skip: bool = True) -> None:
    """Refuse a compressed file whose stream is cut short or damaged: one
    :class:`~abeval.errors.DamagedFile` line naming the file, its size and the
    last whole line read before the fault (for zstd, within 64 KiB of text of it), and with
    ``skip`` how ``--on-error skip`` loads what comes before. One pass of
    decompression, without keeping the text."""
    codec = codec_of(path)
    if codec is None:
        return
    lines = 0
    try:
        for chunk in _pieces(path, codec):
            lines += chunk.count(b"\n")
    except _FAULTS as exc:
        raise _damaged(path, shown, codec, lines, exc, skip) from None


@contextlib.contextmanager
def readable(path: Path, shown: Path, on_error: str) -> Iterator[tuple[Path, Cut | None]]:
    """``path`` itself when the engine reads it (plain, or whole gzip or zstd), else
    a temporary decompressed copy named as the file without its compression suffix;
    with the :class:`Cut` when the stream ended early and ``on_error`` is ``skip``
    (the copy then holds the whole lines before the cut). A cut or damaged file
    raises :class:`~abeval.errors.DamagedFile` otherwise. The copy is removed on
    leaving, whatever happens."""
    codec = codec_of(path)
    if codec is None:
        yield path, None
        return
    if codec in ENGINE_CODECS:
        try:
            check_compressed(path, shown)
        except DamagedFile:
            if on_error != "skip":
                raise
        else:
            yield path, None
            return
    stem, fmt, _ = split_name(path)
    with tempfile.TemporaryDirectory(prefix="abeval-plain-") as folder:
        copy = Path(folder) / (f"{stem}.{fmt}" if fmt else stem or "events")
        lines, tail, fault = 0, 0, None  # tail: bytes after the last line break
        with copy.open("wb") as out:
            try:
                for chunk in _pieces(path, codec):
                    if chunk:
                        out.write(chunk)
                        lines += chunk.count(b"\n")
                        end = chunk.rfind(b"\n")
                        tail = len(chunk) - end - 1 if end >= 0 else tail + len(chunk)
            except _FAULTS as exc:
                fault = exc
        if fault is None:
            yield copy, None
            return
        if on_error != "skip":
            raise _damaged(path, shown, codec, lines, fault)
        with copy.open("r+b") as out:  # drop the line cut in two
            out.truncate(copy.stat().st_size - tail)
        yield copy, Cut(str(shown), codec, path.stat().st_size, lines, tail, _ended(fault))
