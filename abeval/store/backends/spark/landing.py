"""Where validated rows land on Spark: Parquet files, made
visible by one metastore operation (docs/design/spark.md#9-ingest-into-spark).

One ingest ``N`` of a file, after DuckDB has checked every row locally:

1. **Recover**: an ingest committed earlier whose bookkeeping did not finish
   (an ``events`` partition without its ``ingests`` partition) is finished now.
2. **Upload**: the rows are written as Parquet in bounded chunks, by this
   process when it can write the table's folder and the cluster reads what it
   wrote there (:mod:`abeval.store.backends.spark.parquet_out`), else sent to the cluster
   as Arrow tables in chunks (``createDataFrame``; no shared file system needed)
   that Spark writes as Parquet; either way straight into the folder of
   partition ``N`` when the store holds no rows of the file's experiments, else
   into ``_staging``, from which Spark copies the rows the store does not hold
   yet (a row is known by its ``event_id``, else by the digest of the whole
   row; an ``event_id`` stored with other content stops the load, or with
   ``on_error="skip"`` joins the bad rows). The ingest's ``ingests`` row is
   written into that table's partition folder ``N``, and the bad rows an
   ``on_error="skip"`` ingest keeps into ``rejected_rows`` (the same two ways
   as the events).
3. **Commit**: ``ALTER TABLE events ADD PARTITION (ingest_id=N)``, one metastore
   operation: before it no reader sees any of the rows, after it every reader sees
   all of them. An interrupted load leaves only unregistered folders, which the
   next ingest (taking the same ``N``) overwrites.
4. **Bookkeeping**, idempotent and finished by the next ingest if cut short:
   the ``rejected_rows`` partition ``N`` added when the ingest kept bad rows
   (its ``ingests`` row says how many), ``experiments`` rewritten as a new
   version the table is pointed at (:mod:`abeval.store.backends.spark.experiments_table`),
   then ``ALTER TABLE ingests ADD PARTITION (ingest_id=N)`` (last, so that a
   missing ``ingests`` partition says the bookkeeping is unfinished). A reader
   never sees an ingest's bad rows before its rows.

One writer at a time, as on DuckDB: the ingest holds the store's writer lock
(:mod:`abeval.store.backends.spark.lock`), so two ingests never take the same ``N``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval.store.arm_lists import ARMS_JSON
from abeval.store.backends.spark.parquet_out import (
    arrow_schema,
    local_folder,
    upload_mode,
    write_parquet,
)
from abeval.store.backends.spark.schema import (
    COLUMNS,
    PARTITION,
    Layout,
    add_partition_sql,
    data_columns,
    ensure_tables,
)
from abeval.store.ingest.repeats import KEY, differs

if TYPE_CHECKING:
    from abeval.store.backends.spark.connection import SparkConnection
    from abeval.store.backends.spark.database import SparkDatabase

#: The most Arrow bytes in one upload through Spark Connect (about 32,000 rows of
#: events): far below Connect's message limit and the size from which pyspark
#: caches an upload in the driver's block manager for the session's life (64 MiB).
CHUNK_BYTES = 4 * 2**20
#: Spark Connect keeps the plans it resolved last in each session (16 by default),
#: and a plan made from uploaded rows holds them in the driver's heap: the cache
#: is off during an upload, so that the driver holds one chunk at a time.
PLAN_CACHE = "spark.connect.session.planCache.enabled"
_STAGED = "abeval_staged"
_IDS = "abeval_ids"
_MATCH = f"e.experiment = s.experiment AND {KEY.format(t='e.')} = {KEY.format(t='s.')}"

_EXPERIMENTS_SQL = (
    "WITH touched AS (SELECT DISTINCT experiment FROM events WHERE ingest_id = :i), "
    f"fresh AS (SELECT experiment, {ARMS_JSON} AS arms, "
    "MIN(ts) AS first_ts, MAX(ts) AS last_ts FROM events "
    "WHERE experiment IN (SELECT experiment FROM touched) GROUP BY experiment) "
    "SELECT COALESCE(f.experiment, o.experiment) AS experiment, "
    "COALESCE(f.arms, o.arms) AS arms, COALESCE(f.first_ts, o.first_ts) AS first_ts, "
    "COALESCE(f.last_ts, o.last_ts) AS last_ts, o.control_arm, o.split, "
    "CASE WHEN f.experiment IS NULL THEN o.updated_at ELSE :now END AS updated_at, "
    "o.window_from, o.window_to, o.config "
    "FROM fresh f FULL OUTER JOIN experiments o ON o.experiment = f.experiment"
)


class Clashes(Exception):
    """Staged rows whose ``event_id`` the store holds with other content: the file
    is refused, its rows reported as DuckDB reports them (:mod:`.ingest`)."""

    def __init__(self, ids: list[tuple[str, str, int]]) -> None:
        super().__init__(f"{len(ids)} event ids held with other content")
        self.ids = ids


class Landing:
    """One ingest's steps on the cluster of ``store`` (module docstring)."""

    def __init__(self, store: SparkDatabase) -> None:
        from abeval.store.backends.spark.connection import SparkConnection

        self.session = store.session
        self.conn: SparkConnection = SparkConnection(store.session, store.kept)
        # listed again: another writer may have made them since the store was opened
        listed = store.session.sql("SHOW TABLES").collect()
        store.tables = {str(r[1]).lower() for r in listed if not r[2]}
        self.layout: Layout = ensure_tables(store.session, store.tables, store.display)
        store.tables |= set(COLUMNS)
        #: Whether this ingest keeps bad rows in ``rejected_rows`` (:meth:`keep_rejects`).
        self.rejects = False
        self.ingest_id = 0  # this ingest's, once earlier ones are finished
        self.ingest_id = self._recover()

    # 1. recover
    def _partitions(self, table: str) -> set[int]:
        rows = self.session.sql(f"SHOW PARTITIONS {table}").collect()
        return {int(str(r[0]).split("=", 1)[1]) for r in rows}

    def _recover(self) -> int:
        """Finish the bookkeeping of committed ingests; return the next ingest id."""
        events, ingests = self._partitions("events"), self._partitions("ingests")
        for unfinished in sorted(events - ingests):
            self.bookkeep(unfinished)
        return max(events | ingests, default=0) + 1

    # 2. upload
    def holds(self, experiments: list[str]) -> bool:
        """Whether the store holds rows of any of ``experiments``."""
        if not experiments:
            return False
        names = ", ".join(f":x{i}" for i in range(len(experiments)))
        found = self.conn.execute(
            f"SELECT 1 FROM events WHERE experiment IN ({names}) LIMIT 1",
            {f"x{i}": x for i, x in enumerate(experiments)},
        )
        return found.first() is not None

    def holding(self, ids: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
        """``(experiment, event_id, ingest)`` of each of ``ids`` (experiment, event
        id) the store holds, with whatever content (the ingest that holds it first)."""
        from sqlalchemy import text

        if not ids:
            return []
        asked = "experiment STRING, event_id STRING"
        self.session.createDataFrame(ids, schema=asked).createOrReplaceTempView(_IDS)
        rows = self.conn.execute(
            text(
                f"SELECT i.experiment, i.event_id, MIN(e.ingest_id) FROM {_IDS} i JOIN events e "
                "ON e.experiment = i.experiment AND e.event_id = i.event_id "
                "GROUP BY i.experiment, i.event_id"
            )
        ).fetchall()
        self.session.catalog.dropTempView(_IDS)
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def upload(
        self,
        rows: Callable[[], AbstractContextManager[Iterator[Any]]],
        to: str,
        table: str = "events",
    ) -> None:
        """Write the rows of ``rows()`` (Arrow record batches of ``table``'s data
        columns) as Parquet into the folder ``to``, replacing what an interrupted
        load left there: by this process, in bounded chunks, when it can write the
        folder and the cluster then finds every row there
        (:mod:`abeval.store.backends.spark.parquet_out`); else sent through Spark Connect."""
        folder = None if upload_mode() == "connect" else local_folder(to)
        if folder is not None:
            with rows() as batches:
                schema = arrow_schema([c for c in COLUMNS[table] if c[0] != PARTITION])
                written = write_parquet(batches, folder, schema, f"abeval{self.ingest_id}")
            if self._found(to) == written:
                return
            shutil.rmtree(folder, ignore_errors=True)  # the cluster does not see it
        with rows() as batches:
            self._send(batches, to, table)

    def keep_rejects(self, rows: Callable[[], AbstractContextManager[Iterator[Any]]]) -> None:
        """Write the bad rows of ``rows()`` (Arrow record batches of the
        data columns of ``rejected_rows``) into this ingest's (unregistered)
        ``rejected_rows`` partition folder, which the bookkeeping adds."""
        self.upload(rows, self.layout.partition("rejected_rows", self.ingest_id), "rejected_rows")
        self.rejects = True

    def _found(self, to: str) -> int | None:
        """How many rows the cluster reads in the Parquet folder ``to`` (None: it
        finds no such folder)."""
        try:
            return int(self.session.read.parquet(to).count())
        except Exception as exc:
            if "PATH_NOT_FOUND" in str(exc) or "UNABLE_TO_INFER_SCHEMA" in str(exc):
                return None
            raise

    def _send(self, batches: Iterator[Any], to: str, table: str) -> None:
        """The record ``batches`` sent in chunks through Spark Connect, each written
        as Parquet into ``to`` by the executors."""
        mode = "overwrite"
        with _no_plan_cache(self.session):
            for chunk in _chunks(batches):
                frame = self.session.createDataFrame(chunk, schema=_ddl(table))
                frame.write.mode(mode).parquet(to)
                mode = "append"
            if mode == "overwrite":  # no rows: an empty partition still marks the ingest
                self.session.createDataFrame([], schema=_ddl(table)).write.mode(mode).parquet(to)

    def keep_new(self, file: str) -> tuple[int, int]:
        """Copy into this ingest's partition folder the first copy of each staged row
        the store does not hold yet; return how many staged rows it held and how many
        of the others repeated a row before them; :class:`Clashes` when the store
        holds one of their ``event_id`` with other content."""
        from sqlalchemy import text

        self.session.read.parquet(self.layout.staging).createOrReplaceTempView(_STAGED)
        key = KEY.format(t="s.")
        row = self.conn.execute(
            text(
                "SELECT COUNT(e.experiment) FILTER (WHERE NOT "
                f"{differs('e', 's')}) AS held, COUNT(*) FILTER (WHERE e.experiment IS NULL) "
                f"AS new, COUNT(DISTINCT s.experiment, {key}) FILTER (WHERE e.experiment IS "
                "NULL) AS firsts, MIN(CASE WHEN e.experiment IS NOT NULL AND "
                f"{differs('e', 's')} THEN s.event_id END) "
                f"AS clash FROM {_STAGED} s LEFT JOIN events e ON {_MATCH}"
            )
        ).one()
        if row.clash is not None:
            raise Clashes(self._clashes())
        cols = ", ".join(data_columns("events"))
        fresh = self._sql(
            f"SELECT {cols} FROM (SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.experiment, "
            f"{key} ORDER BY s.ts) AS abeval_k FROM {_STAGED} s WHERE NOT EXISTS "
            f"(SELECT 1 FROM events e WHERE {_MATCH})) s WHERE abeval_k = 1"
        )
        fresh.write.mode("overwrite").parquet(self.layout.partition("events", self.ingest_id))
        self.session.catalog.dropTempView(_STAGED)
        return int(row.held), int(row.new) - int(row.firsts)

    def _clashes(self) -> list[tuple[str, str, int]]:
        """``(experiment, event_id, ingest)`` of every staged id the store holds with
        other content (the ingest that holds it first)."""
        from sqlalchemy import text

        rows = self.conn.execute(
            text(
                f"SELECT s.experiment, s.event_id, MIN(e.ingest_id) FROM {_STAGED} s "
                f"JOIN events e ON {_MATCH} WHERE {differs('e', 's')} "
                "GROUP BY s.experiment, s.event_id"
            )
        ).fetchall()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def record(self, values: dict[str, Any]) -> None:
        """Write the ingest's ``ingests`` row into its (unregistered) partition folder."""
        row = tuple(values[c] for c in data_columns("ingests"))
        frame = self.session.createDataFrame([row], schema=_ddl("ingests"))
        frame.write.mode("overwrite").parquet(self.layout.partition("ingests", self.ingest_id))

    # 3. commit
    def commit(self) -> None:
        """The one step that makes the ingest's rows visible."""
        self._add_partition("events", self.ingest_id)

    # 4. bookkeeping
    def bookkeep(self, ingest_id: int) -> None:
        """Register the bad rows ingest ``ingest_id`` kept, bring ``experiments`` up
        to date with it and register its ``ingests`` row; each step can be repeated."""
        if self._kept_rejects(ingest_id):
            where = self.layout.partition("rejected_rows", ingest_id)
            sql = add_partition_sql("rejected_rows", ingest_id, where, if_missing=True)
            self.session.sql(sql).collect()
        self.refresh_experiments(ingest_id)
        self._add_partition("ingests", ingest_id)

    def _kept_rejects(self, ingest_id: int) -> bool:
        """Whether ingest ``ingest_id`` kept bad rows: known for this one, read from
        the (unregistered) ``ingests`` row of an earlier one being finished."""
        if ingest_id == self.ingest_id:
            return self.rejects
        record = self.session.read.parquet(self.layout.partition("ingests", ingest_id))
        return any(int(r[0] or 0) > 0 for r in record.select("rows_rejected").collect())

    def refresh_experiments(self, ingest_id: int) -> None:
        """Recompute arms and time range of the experiments ingest ``ingest_id``
        added to, keeping the recorded settings, into a new version of the table."""
        now = datetime.now(UTC).replace(tzinfo=None)
        from abeval.store.backends.spark.experiments_table import publish

        publish(self.session, self._sql(_EXPERIMENTS_SQL, {"i": ingest_id, "now": now}))

    def _add_partition(self, table: str, ingest_id: int) -> None:
        where = self.layout.partition(table, ingest_id)
        self.session.sql(add_partition_sql(table, ingest_id, where)).collect()

    def _sql(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """A DataFrame of ``sql`` (abeval's portable SQL) through the dialect layer."""
        from abeval.store.backends.spark.dialect import to_spark

        return self.session.sql(to_spark(sql), args=params or None)


def _ddl(table: str) -> str:
    """The data columns of ``table`` as a Spark schema string."""
    return ", ".join(f"{c} {t}" for c, t in COLUMNS[table] if c in data_columns(table))


def _chunks(batches: Iterator[Any], most: int = CHUNK_BYTES) -> Iterator[Any]:
    """Arrow tables of at most ``most`` bytes (or one row) from record ``batches``,
    cut where a batch is larger."""
    import pyarrow as pa

    held: list[Any] = []
    size = 0
    for batch in batches:
        step = max(1, most * batch.num_rows // max(batch.nbytes, 1))
        for start in range(0, batch.num_rows, step):
            piece = batch.slice(start, step)
            if held and size + piece.nbytes > most:
                yield pa.Table.from_batches(held)
                held, size = [], 0
            held.append(piece)
            size += piece.nbytes
    if held:
        yield pa.Table.from_batches(held)


@contextmanager
def _no_plan_cache(session: Any) -> Iterator[None]:
    """:data:`PLAN_CACHE` off in ``session`` for the block, then as it was (a
    server that does not know the setting is left as it is)."""
    changed, before = False, None
    with suppress(Exception):
        before = session.conf.get(PLAN_CACHE, None)
        session.conf.set(PLAN_CACHE, "false")
        changed = True
    try:
        yield
    finally:
        with suppress(Exception):  # a lost server: the session ends anyway
            if changed and before is None:
                session.conf.unset(PLAN_CACHE)
            elif changed:
                session.conf.set(PLAN_CACHE, before)
