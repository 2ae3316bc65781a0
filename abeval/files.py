"""Data files on disk: which format a name says, what to call a model read from
one, and how to write an output so that a reader never sees half of it.

Every command that reads or writes a data file (ingest, evaluate, simulate, the
``--db`` sanity check) asks here, so that ``.csv.gz``, ``.pq`` or ``.ndjson``
mean the same thing everywhere.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

#: The formats abeval reads, by the name DuckDB's readers and ``--format`` use.
FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")

#: Compression suffixes that may follow a format's suffix (``events.csv.gz``).
COMPRESSIONS: tuple[str, ...] = (".gz", ".zst")

_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
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
    """The format (one of :data:`FORMATS`) a file's name says, or None."""
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


def model_argument(text: str) -> tuple[str | None, str]:
    """``(name, path)`` of one model option (``-r``, ``--predictions``), by the rule
    of docs/usage.md#named-models: an existing file is a path (``a=b.csv`` stays a
    file name), else ``NAME=PATH`` splits at the *last* ``=`` whose right side is an
    existing file, so a name may hold ``/`` or ``=`` (``ranker/v1=runs/r.csv``);
    when no right side exists, at the first ``=`` if the name holds no path
    separator, else the whole text is a path. Name None means "from the file name". ValueError
    for an empty name or path, or a PATH that does not exist either."""
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
        raise ValueError(f"{text!r}: the model name before '=' is empty; write NAME=PATH")
    if not path:
        raise ValueError(f"{text!r}: the file after '=' is missing; write NAME=PATH")
    if not Path(path).exists():
        raise ValueError(f"{text!r}: no such file, nor {path!r} (as NAME=PATH); check the path")
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


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename,
    so that the file is either the old one or the whole new one."""
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
