"""Data files on disk: which format a name says, what to call a model read from
one, and how to write an output so that a reader never sees half of it.

Every command that reads or writes a data file (ingest, evaluate, simulate, the
``--db`` sanity check) asks here, so that ``.csv.gz``, ``.pq`` or ``.ndjson``
mean the same thing everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from abeval.errors import OutputError

#: The formats abeval reads, by the name DuckDB's readers and ``--format`` use.
FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")

#: Compression suffixes that may follow a format's suffix (``events.csv.gz``).
COMPRESSIONS: tuple[str, ...] = (".gz", ".zst", ".bz2", ".xz")

_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    # trec_eval's files, which ``evaluate`` reads (abeval/analysis/evaluate/trec.py)
    ".qrels": "qrels",
    ".run": "run",
}


def split_name(path: str | Path) -> tuple[str, str | None, str | None]:
    """``(stem, format, compression)`` of a file name, matched case-insensitively:
    ``Recs.CSV.gz`` gives ``("Recs", "csv", ".gz")``; an unknown suffix gives
    ``(name, None, compression)``."""
    name = Path(path).name
    lower = name.lower()
    compression = None
    for suffix in COMPRESSIONS:
        if lower.endswith(suffix):
            compression = suffix
            name, lower = name[: -len(suffix)], lower[: -len(suffix)]
            break
    for suffix, fmt in _SUFFIXES.items():
        if lower.endswith(suffix):
            return name[: -len(suffix)], fmt, compression
    return name, None, compression


def format_of(path: str | Path) -> str | None:
    """The format a file's name says (one of :data:`FORMATS`, or ``qrels`` or
    ``run`` for trec_eval's files), or None."""
    return split_name(path)[1]


def is_data_file(path: str | Path) -> bool:
    """Whether a name looks like a data file (so not a database)."""
    _, fmt, compression = split_name(path)
    return fmt is not None or compression is not None


def model_names(paths: Sequence[str | Path]) -> list[str]:
    """A name for each model file: its stem (``runs/bm25.csv.gz`` → ``bm25``), or
    the whole paths when two stems would be the same."""
    names = [split_name(p)[0] or str(p) for p in paths]
    if len(set(names)) < len(names):
        return [str(p) for p in paths]
    return names


def model_argument(
    text: str, *, what: str = "model name", form: str = "NAME=PATH", must_exist: bool = True
) -> tuple[str | None, str]:
    """``(name, path)`` of one model option (``-r``, ``--predictions``), by the rule
    of docs/usage.md#named-models: an existing file is a path (``a=b.csv`` stays a
    file name), else ``NAME=PATH`` splits at the *last* ``=`` whose right side is an
    existing file, so a name may hold ``/`` or ``=`` (``ranker/v1=runs/r.csv``);
    when no right side exists, at the first ``=`` if the name holds no path
    separator, else the whole text is a path. Name None means "from the file name". ValueError
    for an empty name or path, or (``must_exist``) a PATH that does not exist either.
    ``what`` and ``form`` name the name and the option's form in those messages (other
    options of the same form: ``agreement --target-propensities EXPERIMENT=FILE``)."""
    if "=" not in text or Path(text).is_file():
        return None, text
    cuts = [i for i, c in enumerate(text) if c == "="]
    found = next((i for i in reversed(cuts) if Path(text[i + 1 :]).exists()), None)
    if found is None:  # no FILE exists: a NAME holds no path separator
        found = cuts[0]
        if any(sep and sep in text[:found] for sep in ("/", os.sep, os.altsep)):
            return None, text
    name, path = text[:found], text[found + 1 :]
    if not name.strip():
        raise ValueError(f"{text!r}: the {what} before '=' is empty; write {form}")
    if not path:
        raise ValueError(f"{text!r}: the file after '=' is missing; write {form}")
    if must_exist and not Path(path).exists():
        raise ValueError(f"{text!r}: no such file, nor {path!r} (as {form}); check the path")
    return name, path


def named_models(texts: Sequence[str]) -> dict[str, str]:
    """Model name → path of repeated model options (:func:`model_argument`): the
    names given, and for the others :func:`model_names` of their paths. ValueError
    when two models would have the same name."""
    parsed = [model_argument(t) for t in texts]
    derived = iter(model_names([p for n, p in parsed if n is None]))
    out: dict[str, str] = {}
    for given, path in parsed:
        name = given if given is not None else next(derived)
        if name in out:
            raise ValueError(
                f"two models are named {name!r} ({out[name]} and {path}); "
                "give each its own name with NAME=PATH"
            )
        out[name] = path
    return out


def sha256_file(path: str | Path) -> tuple[str, int]:
    """The SHA-256 hex digest of a file's bytes and how many bytes were hashed: the
    fingerprint the ingest record and recorded evaluations keep."""
    h = hashlib.sha256()  # hardware-accelerated on current CPUs: 2.5x blake2b here
    size = 0
    with Path(path).open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def write_atomic(path: str | Path, text: str, *, make_folders: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename,
    so that the file is either the old one or the whole new one.

    :class:`~abeval.errors.OutputError` (one line naming the path and the fix, and
    nothing left behind) when ``path`` is a folder, lies under a file, in a folder
    that does not exist (created instead when ``make_folders``), or where nothing
    can be written."""
    out = Path(path)
    try:
        folder = _output_folder(out, make_folders)
        special = out.exists() and not out.is_file()
    except OSError as exc:  # a name too long, a loop of links: the path cannot be asked about
        reason = exc.strerror or type(exc).__name__
        raise OutputError(
            f"cannot write {out}: {reason}; choose another name", path=str(out)
        ) from None
    if special:
        # A device or a pipe (-o /dev/null, -o /dev/stderr): written into, never
        # replaced by a rename (as root that would put a plain file in /dev).
        try:
            with out.open("w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise OutputError(f"cannot write {out}: {reason}", path=str(out)) from None
        return
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if exc.errno == errno.ENAMETOOLONG:
            raise OutputError(
                f"cannot write {out}: {reason}; choose a shorter name", path=str(out)
            ) from None
        raise OutputError(
            f"cannot write {out}: the folder {folder} takes no new file ({reason}); "
            "choose a folder you can write to",
            path=str(out),
        ) from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _output_folder(out: Path, make_folders: bool) -> Path:
    """The folder ``out`` will be written in, checked (and created when
    ``make_folders``); OutputError when ``out`` cannot be a file there."""
    if out.is_dir():
        raise OutputError(
            f"cannot write {out}: it is a folder; name a file inside it",
            path=str(out),
        )
    folder = out.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise OutputError(
            f"cannot write {out}: {existing} is a file, not a folder; choose another path",
            path=str(out),
        )
    if existing == folder:
        return folder
    if not make_folders:
        raise OutputError(
            f"cannot write {out}: the folder {folder} does not exist; "
            f"create it (mkdir -p {folder}) or choose another path",
            path=str(out),
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"cannot write {out}: cannot create the folder {folder} "
            f"({exc.strerror or type(exc).__name__}); choose another path",
            path=str(out),
        ) from None
    return folder


#: Byte-order marks of the encodings abeval does not read (UTF-32 first: its
#: little-endian mark starts with UTF-16's).
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def wide_encoding(head: bytes) -> str | None:
    """The encoding of text whose first bytes are ``head`` when it is UTF-16 or
    UTF-32: ``"UTF-16"``/``"UTF-32"`` after a byte-order mark (iconv reads the byte
    order from it), else ``"UTF-16LE"``, ``"UTF-16BE"``, ``"UTF-32LE"`` or
    ``"UTF-32BE"`` told by where the zero bytes of ASCII characters fall. None for
    anything else (UTF-8, Latin-1, binary without that pattern)."""
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return name
    for width, names in ((4, ("UTF-32LE", "UTF-32BE")), (2, ("UTF-16LE", "UTF-16BE"))):
        units = [head[i : i + width] for i in range(0, len(head) - width + 1, width)]
        if len(units) < 2:
            continue
        little = sum(u[0] != 0 and not any(u[1:]) for u in units)
        big = sum(u[-1] != 0 and not any(u[:-1]) for u in units)
        for count, name in ((little, names[0]), (big, names[1])):
            if count >= 0.6 * len(units):
                return name
    return None


def wide_text_error(path: str | Path, shown: str | None = None) -> str | None:
    """The one line for a UTF-16 or UTF-32 text file (with or without a byte-order
    mark, plain or gzip-compressed), naming the encoding and the ``iconv`` command
    that converts it; None for a file in any other encoding, or unreadable."""
    import gzip

    p = Path(path)
    compressed = p.name.lower().endswith(".gz")
    try:
        with gzip.open(p, "rb") if compressed else p.open("rb") as f:
            head = f.read(4096)
    except (OSError, EOFError):
        return None
    encoding = wide_encoding(head)
    if encoding is None:
        return None
    name = shown or str(p)
    stem, fmt, _ = split_name(p)
    converted = f"{stem}.utf8.{fmt or 'csv'}"
    convert = f"iconv -f {encoding} -t UTF-8 {name} > {converted}"
    if compressed:
        convert = f"gzip -dc {name} | iconv -f {encoding} -t UTF-8 > {converted}"
    return f"{name} is {encoding} text; abeval reads UTF-8: convert it with `{convert}`"


#: Magic bytes of the compressions a spooled stream may carry.
_MAGIC = (
    (b"\x1f\x8b", ".gz"),
    (b"\x28\xb5\x2f\xfd", ".zst"),
    (b"BZh", ".bz2"),
    (b"\xfd7zXZ", ".xz"),
)


@contextlib.contextmanager
def spooled(stream: BinaryIO, fmt: str) -> Iterator[Path]:
    """The bytes of ``stream`` (standard input) copied to a temporary file named
    for ``fmt`` (and for the compression its first bytes show: gzip, zstd, bzip2, xz), so
    that readers that read a file twice (the staged load, its line numbers) can;
    the file and its folder are removed on leaving, whatever happens."""
    with tempfile.TemporaryDirectory(prefix="abeval-stdin-") as folder:
        head = stream.read(5)
        compression = next((c for magic, c in _MAGIC if head.startswith(magic)), "")
        path = Path(folder) / f"stdin.{fmt}{compression}"
        with path.open("wb") as out:
            out.write(head)
            shutil.copyfileobj(stream, out, 1 << 22)
        yield path
