"""The store: ``open`` gives a :class:`Store`, which loads events (``ingest``), lists
what it holds (``experiments``, ``rejects``), upgrades its schema (``migrate``) and
offers every analysis through its parts (:mod:`abeval.api.reporting`,
:mod:`~abeval.api.planning`, :mod:`~abeval.api.across`, :mod:`~abeval.api.offline`,
:mod:`~abeval.api.configuration`); ``demo`` runs ``abeval demo``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast, get_args

from abeval.api.across import Across
from abeval.api.configuration import Configuring
from abeval.api.offline import Offline
from abeval.api.options import at_least, choice, given, keywords_checked, within
from abeval.api.planning import Planning
from abeval.api.programs import Programs
from abeval.api.reporting import Reporting
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.store.experiments import ExperimentSummary
    from abeval.store.ingest import IngestSummary
    from abeval.store.migrate import Migration
    from abeval.store.rejects import RejectedRow


@keywords_checked
def open(
    db: str | Path | None = None,
    *,
    read_only: bool = False,
    create: bool = True,
    migrate: bool = True,
) -> Store:
    """Open the store ``db`` (a DuckDB file, a SQLAlchemy URL or a Spark Connect
    URL; default ``$ABEVAL_DB``, else ``./abeval.duckdb``). Writable by default
    (a missing DuckDB file is created unless ``create=False``); ``read_only=True``
    for analysis only. ``migrate=False`` leaves the schema as it is (for
    :meth:`Store.migrate`, which reports the steps it applies).

    A DuckDB file is held read-only between calls, so other processes (the CLI,
    another notebook) read it meanwhile; a write (``ingest``, ``set``,
    ``add_metrics`` ...) takes the writer lock for its own duration only, waiting
    for it with a line on standard error. ``close()`` closes the store for good.

    >>> with abeval.open("demo/demo.duckdb", read_only=True) as store:
    ...     names = [e.experiment for e in store.experiments()]
    """
    from abeval.store.held import HeldStore

    shown = None if db is None else str(db)
    return Store(HeldStore(shown, read_only=read_only, create=create, migrate=migrate))


def rejects_options(ingest: int | None, limit: int) -> None:
    """:meth:`Store.rejects`'s options, checked (an OptionError naming the first bad one).

    >>> abeval.api.rejects_options(None, 50)
    >>> abeval.api.rejects_options(None, 0)  # doctest: +SKIP
    Traceback (most recent call last):
    abeval.errors.OptionError: limit=0: give at least 1 row
    """
    at_least("limit", limit, 1, "give at least 1 row")
    if ingest is not None:
        within("ingest", ingest, 1, 2**62 - 1, "ingest ids start at 1")


@keywords_checked
def ingest_options(
    files: Sequence[str | Path | Any],
    *,
    input_format: str | None = None,
    fmt: str | None = None,
    on_error: str = "abort",
    epoch: str | None = None,
) -> str | None:
    """:meth:`Store.ingest`'s options for the ``files`` to load, checked without a
    store (the CLI checks them before it opens one): standard input (``"-"``) named
    once, the format given once (``fmt`` is the former name of ``input_format``),
    each a choice. Returns the input format (None: told by each file's name).

    >>> abeval.api.ingest_options(["a.csv", "-"], input_format="csv")
    'csv'
    """
    from abeval.choices import EpochUnit, FileFormat, OnError

    stdin = sum(isinstance(f, str | Path) and str(f) == "-" for f in files)
    given("files", stdin <= 1, "standard input can be read once; give - once")
    same = input_format is None or fmt is None or input_format == fmt
    given("input_format", same, "give it once, not also {fmt}", mentions=("fmt",))
    input_format = input_format or fmt
    choice("on_error", on_error, get_args(OnError))
    if epoch is not None:
        choice("epoch", epoch, get_args(EpochUnit))
    if input_format is not None:
        choice("input_format", input_format, get_args(FileFormat))
    return input_format


class Experiments(list["ExperimentSummary"]):
    """The experiments of a store (a list), with ``problems``: the sources read
    in place that could not be listed, one line each.

    >>> with abeval.open("demo/demo.duckdb", read_only=True) as store:  # doctest: +SKIP
    ...     store.experiments().to_frame()[["experiment", "arm", "users"]].head(2)
         experiment        arm  users
    0  home-reco-v2    control  15020
    1  home-reco-v2  treatment  14980
    """

    problems: tuple[str, ...] = ()

    def to_frame(self) -> Any:
        """One row per experiment × arm (a pandas DataFrame), columns named as the
        JSON keys of each experiment's ``to_dict()``; an arm's events by type are
        ``events.click`` ...

        >>> store.experiments().to_frame().groupby("experiment")["users"].sum()
        """
        from abeval.report.frames import experiment_rows, frame

        return frame(experiment_rows([e.to_dict() for e in self]))

    def __repr__(self) -> str:
        names = ", ".join(e.experiment for e in self[:5]) + (" ..." if len(self) > 5 else "")
        return (
            f"<Experiments: {len(self)} ({names})\n"
            " — .to_frame(), [e.to_dict() for e in ...], abeval.render.experiments_lines(...)>"
        )


class Store(Reporting, Planning, Across, Offline, Configuring, Programs):
    """An open store: ``with abeval.open("abeval.duckdb") as store: ...``.

    >>> store = abeval.open("demo/demo.duckdb", read_only=True)
    >>> store.report("home-reco-v2").to_frame()  # one row per metric × arm
    >>> store.close()
    """

    def ingest(
        self,
        path: str | Path | BinaryIO,
        *,
        input_format: str | None = None,
        on_error: str = "abort",
        progress: Callable[[str], None] | None = None,
        fmt: str | None = None,
        epoch: str | None = None,
    ) -> IngestSummary:
        """Load one event file (all or nothing; loading it again adds nothing), or
        a pandas DataFrame or pyarrow Table of events (as a Parquet file of them).

        ``path`` ``"-"`` reads standard input, and a binary stream (an open file,
        ``io.BytesIO``) is read too: both need ``input_format`` and are named
        ``-`` in the summary and the record. ``fmt`` is the former name of
        ``input_format``. ``epoch`` (``s``, ``ms``, ``us``) declares the unit of
        numeric timestamps; by default it is told by their magnitude.

        >>> with abeval.open("abeval.duckdb") as store:
        ...     summary = store.ingest("events.parquet", on_error="skip")
        >>> summary.inserted, summary.rejected
        """
        from abeval.choices import FileFormat, OnError
        from abeval.store.ingest import ingest_file

        input_format = ingest_options(
            [path], input_format=input_format, fmt=fmt, on_error=on_error, epoch=epoch
        )
        mode = cast(OnError, on_error)
        if not isinstance(path, str | Path) and not hasattr(path, "read"):
            return self._ingest_frame(path, mode, progress, epoch)
        if isinstance(path, str | Path) and str(path) != "-":
            with self._writing() as store:
                return ingest_file(
                    store, path, fmt=input_format, on_error=mode, progress=progress, epoch=epoch
                )
        if input_format is None:
            raise OptionError(
                "input_format",
                None,
                "standard input has no file name to tell its format by; give csv, parquet or jsonl",
                allowed=get_args(FileFormat),
            )
        import sys

        from abeval.files import spooled

        stream = sys.stdin.buffer if isinstance(path, str | Path) else path
        with spooled(stream, input_format) as copy, self._writing() as store:
            return ingest_file(
                store,
                copy,
                fmt=input_format,
                on_error=mode,
                progress=progress,
                shown="-",
                epoch=epoch,
            )

    def _ingest_frame(
        self,
        data: Any,
        on_error: Any,
        progress: Callable[[str], None] | None,
        epoch: str | None,
    ) -> IngestSummary:
        """A pandas DataFrame or a pyarrow Table, loaded as the Parquet file it is
        written to (the file's accounting, checks and rejects; its rows counted
        from 1), named after its type (``DataFrame``) in messages and the record."""
        import tempfile

        import pyarrow as pa
        import pyarrow.parquet as pq

        from abeval.analysis.evaluate.reader import Frame, source
        from abeval.store.ingest import ingest_file

        frame = source("path", data)  # one line for what is neither file nor frame
        given = frame.data if isinstance(frame, Frame) else frame
        table = (
            given
            if isinstance(given, pa.Table)
            else pa.Table.from_pandas(given, preserve_index=False)
        )
        with tempfile.TemporaryDirectory(prefix="abeval-frame-") as folder:
            path = Path(folder) / "frame.parquet"
            pq.write_table(table, path)
            with self._writing() as store:
                return ingest_file(
                    store,
                    path,
                    fmt="parquet",
                    on_error=on_error,
                    progress=progress,
                    shown=type(data).__name__,
                    epoch=epoch,
                )

    def experiments(self) -> Experiments:
        """What the store holds: each experiment's arms, users, events and time range.

        >>> store.experiments().to_frame()  # one row per experiment × arm
        """
        from abeval.store.experiments import list_experiments
        from abeval.store.sources import source_experiments

        found = Experiments(list_experiments(self._store))
        in_place, problems = source_experiments(self._store)
        found += in_place
        found.problems = tuple(problems)
        return found

    def rejects(self, *, ingest: int | None = None, limit: int = 50) -> list[RejectedRow]:
        """The rows ``ingest`` (default: every ingest) rejected with
        ``on_error="skip"``, by ingest and line, at most ``limit``.

        >>> [(r.line, r.reason) for r in store.rejects(limit=5)]
        """
        from abeval.store.rejects import rejected_rows

        rejects_options(ingest, limit)
        return rejected_rows(self._store, ingest=ingest, limit=limit)

    def migrate(self) -> list[Migration]:
        """Create the schema or upgrade it to this version of abeval (open the store
        with ``migrate=False`` to see the steps); the steps applied, none when it is
        up to date.

        >>> [step.name for step in abeval.open("old.duckdb", migrate=False).migrate()]
        """
        from abeval.store.migrate import apply

        with self._writing() as store:
            return apply(store)
