"""Kept summaries: what one experiment's session reads of its events, kept in the
store once computed (docs/architecture.md#kept-summaries).

The :class:`~abeval.analysis.session.ExperimentSession` asks here first for each
of its three parts read from the events: ``observed`` (the per-arm sufficient
statistics of every metric, the health counts, the daily and segment moments,
the caps), ``offline`` (the replayed offline metrics) and ``ope`` (the
off-policy estimates), and for ``compared``, the online comparisons computed
from ``observed`` under the options. A part is found under two digests:

- ``options_key``: the run's options it was computed under
  (:class:`~abeval.analysis.report_model.ReportOptions`, the saved configuration
  applied, and the size and time of a ``--target-propensities`` file);
- ``depends``: what it was computed from (:func:`depends`): the experiment's
  row of ``experiments`` (its recorded settings, saved configuration and the
  stamp every ingest that adds events to it rewrites: the times of its first and
  last events and of the change), its recorded target probabilities, the
  store's metric definitions, and :data:`SUMMARY_VERSION`. None of these reads
  the events, so a warm read runs no statement over them.

An ingest, ``experiment set``, ``metrics add`` or recording target probabilities
changes ``depends``, so a summary computed before is never read again and is
replaced when the part is next computed. Everything after these parts (the
comparisons, decisions, the board's statistics, the forecast) is computed from
them as it is from a fresh read: there is one code path for the numbers.

Parts are written as JSON (:func:`encode`, :func:`decode`): every frozen
dataclass by its class and fields, tuples, dicts (any key), sets and times
tagged, floats as Python writes them (``repr``, which reads back to the same
float, NaN and infinities included).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import os
from collections.abc import Callable, Mapping
from datetime import date, datetime
from numbers import Integral
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from abeval.store.kept import KeptRow, read_kept, write_kept

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.analysis.report_model import ReportOptions
    from abeval.store.database import Database
    from abeval.store.experiment_facts import ExperimentRow
    from abeval.store.ope_target import RecordedTargets

#: Raise when what a part holds or how it is computed changes: every summary
#: kept by an earlier version is then computed again.
SUMMARY_VERSION = 5

#: The parts of a session that are kept.
PARTS = ("observed", "offline", "ope", "compared", "interleaving", "power", "judged")

T = TypeVar("T")


class CannotKeep(ValueError):
    """A value the summary's JSON cannot hold (the part is then not kept)."""


def encode(value: Any) -> str:
    """``value`` (frozen dataclasses of abeval, containers, numbers, text, times)
    as one compact JSON text that :func:`decode` reads back equal."""
    return json.dumps(_plain(value), separators=(",", ":"), allow_nan=True)


def decode(body: str) -> Any:
    """The value :func:`encode` wrote."""
    return _value(json.loads(body))


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, Integral):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return {"t": [_plain(x) for x in v]}
    if isinstance(v, MappingProxyType):
        return {"m": [[_plain(k), _plain(x)] for k, x in v.items()]}
    if isinstance(v, dict):
        return {"d": [[_plain(k), _plain(x)] for k, x in v.items()]}
    if isinstance(v, frozenset):
        return {"fs": sorted((_plain(x) for x in v), key=repr)}
    if isinstance(v, datetime):
        return {"dt": v.isoformat()}
    if isinstance(v, date):
        return {"da": v.isoformat()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        cls = type(v)
        if not cls.__module__.startswith("abeval."):
            raise CannotKeep(f"{cls.__module__}.{cls.__qualname__}")
        values = {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
        return {"c": [f"{cls.__module__}:{cls.__qualname__}", values]}
    raise CannotKeep(type(v).__name__)


def _value(v: Any) -> Any:
    if isinstance(v, list):
        return [_value(x) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) != 1:
        raise CannotKeep("a tag of one key")
    ((tag, inner),) = v.items()
    if tag == "t":
        return tuple(_value(x) for x in inner)
    if tag == "d":
        return {_value(k): _value(x) for k, x in inner}
    if tag == "m":
        return MappingProxyType({_value(k): _value(x) for k, x in inner})
    if tag == "fs":
        return frozenset(_value(x) for x in inner)
    if tag == "dt":
        return datetime.fromisoformat(inner)
    if tag == "da":
        return date.fromisoformat(inner)
    if tag == "c":
        name, values = inner
        return _instance(name, {k: _value(x) for k, x in values.items()})
    raise CannotKeep(f"unknown tag {tag!r}")


def _instance(name: str, values: dict[str, Any]) -> Any:
    """An abeval dataclass by its ``module:qualname`` (nothing else is made). One
    whose fields are all given to its constructor is made without it: its values
    were written from an instance that its ``__post_init__`` had checked and
    cleaned already (running it again costs most of a warm read and changes
    nothing); one with a field its ``__post_init__`` computes is constructed."""
    cls, names = _class(name)
    if names is None or names != values.keys():
        return cls(**values)
    made = object.__new__(cls)
    made.__dict__.update(values)
    return made


@functools.lru_cache(maxsize=512)
def _class(name: str) -> tuple[Any, frozenset[str] | None]:
    """The abeval dataclass ``module:qualname`` names, and the names of its fields
    when every one is given to the constructor and its instances keep a
    ``__dict__`` (else None: it is constructed). A cache of a pure function."""
    module, _, qualname = name.partition(":")
    if not module.startswith("abeval."):
        raise CannotKeep(name)
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise CannotKeep(name)
    found = dataclasses.fields(cls)
    plain = all(f.init for f in found) and not hasattr(cls, "__slots__")
    return cls, frozenset(f.name for f in found) if plain else None


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def options_key(o: ReportOptions) -> str:
    """The digest of the options a part is computed under (where each setting came
    from, which only the report's wording reads, left out), with the size and time
    of a target-probabilities file the options name."""
    plain = dataclasses.replace(o, flags=None, sources=())
    given = o.ope.target_propensities
    stat: tuple[int, int] | str | None = None
    if given is not None:
        try:
            found = os.stat(given)
            stat = (found.st_size, found.st_mtime_ns)
        except OSError:
            stat = "missing"
    return _digest([repr(plain), stat])


def depends(
    experiment: str, row: ExperimentRow, targets: RecordedTargets | None, catalog: Catalog
) -> str:
    """The digest of what the experiment's parts are computed from (module doc):
    its row, whose ``stamp`` stands for its events (every ingest that adds events
    to it rewrites the stamp), and its recorded ``targets``."""
    from abeval import __version__

    metrics = _catalog_print(catalog)
    return _digest(
        [
            SUMMARY_VERSION,
            __version__,
            experiment,
            repr(row.settings),
            row.config,
            row.stamp,
            None if targets is None else (targets.checksum, targets.recorded_at.isoformat()),
            metrics,
        ]
    )  # fmt: skip


def _catalog_print(catalog: Catalog) -> tuple[Any, ...]:
    """What of ``catalog`` a result depends on: the team metrics' definitions,
    variables, caps, unseen events and failures (the built-ins are abeval's)."""
    return (
        sorted((n, repr(d)) for n, d in catalog.definitions.items()),
        repr(catalog.team_variables),
        sorted(catalog.caps.items()),
        sorted(catalog.unseen),
        sorted(catalog.failed.items()),
    )


def kept_part(kept: Mapping[str, str], part: str, kind: type) -> Any | None:
    """The kept ``part`` of ``kept`` (:func:`abeval.store.kept.read_kept`) as an
    instance of ``kind`` (a tuple for ``offline``), or None when none is kept or
    what is kept cannot be read (then it is computed)."""
    body = kept.get(part)
    if body is None:
        return None
    try:
        found = decode(body)
    except (CannotKeep, ValueError, TypeError, KeyError, AttributeError, ImportError):
        return None
    return found if isinstance(found, kind) else None


def keep_row(experiment: str, part: str, key: str, depends: str, value: Any) -> KeptRow | None:
    """The row that keeps ``value``; None when it holds what JSON cannot."""
    try:
        body = encode(value)
    except CannotKeep:
        return None
    return KeptRow(experiment, part, key, depends, body)


#: The ``experiment`` of a kept result of the whole store (the board's statistics).
STORE_WIDE = ""


def computed_once(
    store: Database,
    part: str,
    inputs: Any,
    catalog: Catalog | None,
    compute: Callable[[], T],
    kind: type,
) -> T:
    """``compute()``, a pure function of ``inputs`` (frozen results and options)
    and of ``catalog``, kept in the store under the digest of both: the board's
    statistics of the pairs its experiments gave (their bootstrap and model fits
    cost more than reading kept experiments), or the store's listing of its
    experiments (``catalog`` None: no metric goes into it). Another input, another
    digest: the kept one is replaced."""
    from abeval import __version__

    if not store.backend.runs_migrations:  # Spark: no table to keep it in
        return compute()
    try:
        metrics = None if catalog is None else _catalog_print(catalog)
        depends = _digest([SUMMARY_VERSION, __version__, encode(inputs), metrics])
    except CannotKeep:
        return compute()
    with store.connect() as conn:
        found = kept_part(read_kept(conn, STORE_WIDE, part, depends), part, kind)
    if found is not None:
        return found
    value = compute()
    row = keep_row(STORE_WIDE, part, part, depends, value)
    if row is not None and store.keeping is not None:
        store.keeping.append(row)
        write_pending(store)
    return value


def write_pending(store: Database) -> None:
    """Write the kept summaries waiting on a writable ``store`` now (no connection
    of it may be open); a DuckDB file held read-only between calls writes them
    after the API's call instead (:mod:`abeval.store.held`)."""
    keeping = store.keeping
    if keeping and not store.read_only:
        rows, keeping[:] = list(keeping), []
        write_kept(store, rows)
