"""A store on a Spark Connect server: ``--db sc://HOST:15002``.

abeval reads the tables ``events``, ``experiments`` and ``ingests`` of the
session's current database (docs/design/spark.md §8). ``abeval ingest`` creates
them when they are missing and loads files into them (:mod:`abeval.store.backends.spark.ingest`,
§9); ``experiments``, ``report`` and ``agreement`` read them; ``source add``/``remove``,
``evaluate --experiment``, ``metrics add`` and ``experiment set``/``unset`` write
abeval's own small tables and ``experiments`` (:meth:`SparkDatabase.own_tables`).
Every writer holds the store's writer lock (:mod:`abeval.store.backends.spark.lock`).
Any other command that writes stops with one line when it begins to write. Spark's
errors become the one-line :class:`~abeval.errors.StoreError` the CLI prints.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, cast

from abeval.errors import StoreError, interruption
from abeval.store.backends.url_secrets import masked_url, without_secrets
from abeval.store.database import Database

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.backends.spark.backend import SparkBackend

SCHEME = "sc://"
#: Retries of the first contact with the server (about 3 s in all).
OPEN_RETRIES = 4
#: Retries once the session is open, when the server stops answering (its driver
#: died, the machine went away): backoffs of 0.2, 0.4, ... up to 4 s, about 10 s in
#: all, so that a lost server is one line within a minute (with the 25 s the
#: keepalive may take to notice a frozen one). pyspark's default waits 10 minutes,
#: and reattaches to a query for as long.
LOST_SERVER_RETRIES = (6, 200, 4000)  # retries, first and largest backoff (ms)
#: gRPC keepalive of the session's connection, unless the URL sets its own
#: (``;grpc_keepalive_time_ms=...``): a ping every 15 s, an answer within 10 s, so
#: that a server frozen or cut off without closing the connection (no reset, as
#: when its machine is lost) fails the call within about 25 s rather than pyspark's
#: 80 s. The server accepts a client's pings every 10 s or more.
KEEPALIVE = {"grpc_keepalive_time_ms": "15000", "grpc_keepalive_timeout_ms": "10000"}
#: gRPC channel settings: pings however long the call sends no data (gRPC stops
#: after two by default, and a long statement sends nothing while it runs), an
#: unanswered ping that fails the connection after 10 s (gRPC's own ping timeout,
#: 60 s by default, overrides the keepalive's), and a connection attempt (the
#: retries' reconnects) that gives up after 5 s rather than 20 s.
CHANNEL_OPTIONS = [
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.ping_timeout_ms", 10_000),
    ("grpc.min_reconnect_backoff_ms", 5000),
]
#: The tables a report reads.
TABLES = ("events", "experiments", "ingests")
#: Session settings that make Spark read timestamps as abeval does: zone-less, in UTC.
SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
}


def display_spark_url(url: str) -> str:
    """The URL with its password and any ``;token=...`` masked."""
    return masked_url(url)


class SparkDatabase(Database):
    """An open Spark Connect session, used like :class:`~abeval.store.database.Database`."""

    def __init__(
        self,
        session: Any,
        url: str,
        read_only: bool,
        backend: SparkBackend,
        tables: set[str] | None = None,
        lock_timeout: float = 10.0,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(
            engine=cast(Any, None),
            url=url,
            read_only=read_only,
            backend=backend,
        )
        self.session = session
        self.kept: dict[str, Any] = {}
        #: The tables of the session's current database (lower case), as listed on opening.
        self.tables: set[str] = set(tables or ())
        #: How long a writer waits for the writer lock, and whom it tells that it waits.
        self.lock_timeout = lock_timeout
        self.on_lock_wait = on_lock_wait
        #: Set when the server stopped answering (:meth:`faults`).
        self.lost = False

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        from abeval.store.backends.spark.connection import SparkConnection

        with self.faults():
            yield cast("Connection", SparkConnection(self.session, self.kept))

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        raise StoreError(writes_refused(self.display), parameters=("db",))
        yield  # pragma: no cover

    @contextmanager
    def writer_lock(self, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """The store's writer lock for the block (:mod:`abeval.store.backends.spark.lock`)."""
        from abeval.store.backends.spark.lock import writer_lock

        with (
            self.faults(),
            writer_lock(
                self.session, self.display, self.lock_timeout, on_wait or self.on_lock_wait
            ),
        ):
            yield

    @contextmanager
    def own_tables(self) -> Iterator[Connection]:
        """A connection for writing abeval's own small tables (sources, recorded
        evaluations, target probabilities; :mod:`abeval.store.backends.spark.own_tables`),
        under the writer lock. Spark has no transaction: each table's new content
        is committed by one pointer swap."""
        with self.writer_lock(), self.connect() as conn:
            yield conn

    @contextmanager
    def faults(self) -> Iterator[None]:
        try:
            yield
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            if not _is_spark_error(exc):
                raise
            if _server_lost(exc):
                self.lost = True
                _no_retries(self.session)  # the goodbyes that follow fail at once
                raise StoreError(
                    f"the store {self.display} stopped answering: its Spark Connect server "
                    "is gone (the driver stopped, or its machine); start it again and run "
                    "the command again"
                ) from None
            raise StoreError(spark_message(self.display, exc)) from None

    def close(self) -> None:
        self.kept.clear()
        with suppress(Exception):  # the server may be gone; nothing is left to release
            if self.lost:  # no retries of the goodbye to a server known to be gone
                _no_retries(self.session)
            self.session.stop()


def _no_retries(session: Any) -> None:
    """No more retries of the session's calls (its server is known to be gone)."""
    with suppress(Exception):
        from pyspark.sql.connect.client.retries import DefaultPolicy

        session.client.set_retry_policies([DefaultPolicy(max_retries=0)])


def writes_refused(shown: str) -> str:
    return (
        f"{{db}} {shown}: on a Spark store abeval loads events (ingest), reads them "
        "(experiments, report, agreement) and records sources, offline evaluations, "
        "team-defined metrics and experiment settings in this version; run this command "
        "on a DuckDB or PostgreSQL store"
    )


def open_spark_store(
    url: str,
    backend: SparkBackend,
    *,
    read_only: bool,
    lock_timeout: float = 10.0,
    on_lock_wait: Callable[[str], None] | None = None,
) -> SparkDatabase:
    """Connect to the Spark Connect server of ``url`` and check the tables abeval reads."""
    shown = display_spark_url(url)
    if url.startswith("spark://"):
        raise StoreError(
            f"{{db}} {shown} is a Spark master; abeval talks to a Spark Connect server: "
            "use sc://HOST:15002",
            parameters=("db",),
        )
    if not read_only:  # a writer's settings, checked before it connects
        from abeval.store.backends.spark.parquet_out import upload_mode

        upload_mode()
    try:
        from pyspark.sql.connect.session import DefaultChannelBuilder, SparkSession
    except ImportError as exc:
        raise StoreError(
            f"cannot open the store {shown}: Spark Connect needs pyspark ({exc.name} is "
            "missing); install abeval[spark]"
        ) from None
    quiet_spark_logs()
    try:
        session = SparkSession.builder.channelBuilder(_channel(DefaultChannelBuilder, url)).create()
        tables = _first_contact(session)
    except KeyboardInterrupt:
        raise interruption() from None
    except Exception as exc:
        if not _is_spark_error(exc):
            raise
        reason = without_secrets(spark_reason(exc), url)
        raise StoreError(f"cannot open the store {shown}: {reason}") from None
    missing = [t for t in TABLES if t not in tables]
    if missing and read_only:
        session.stop()
        raise StoreError(
            f"the Spark store {shown} has no table {', '.join(missing)} in its current "
            "database; load events with "
            f"`abeval ingest --db {shlex.quote(shown)} FILE`, which creates "
            "them (docs/design/spark.md)"
        )
    return SparkDatabase(session, url, read_only, backend, tables, lock_timeout, on_lock_wait)


def _channel(builder_class: Any, url: str) -> Any:
    """The channel builder (pyspark's ``DefaultChannelBuilder``) of ``url`` with
    abeval's keepalive and channel settings."""
    builder = builder_class(url, channelOptions=CHANNEL_OPTIONS)
    for key, value in KEEPALIVE.items():
        if builder.getDefault(key, None) is None:
            builder.set(key, value)
    return builder


def _first_contact(session: Any) -> set[str]:
    """Set the session's time zone and timestamp type, and list the current
    database's tables. A server that does not answer fails within seconds:
    Spark's default retries wait 10 minutes; the queries that follow retry for
    about 10 s (:data:`LOST_SERVER_RETRIES`)."""
    import warnings

    from pyspark.sql.connect.client.retries import DefaultPolicy

    client = session.client
    client.set_retry_policies([DefaultPolicy(max_retries=OPEN_RETRIES)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RETRIES_EXCEEDED: said in the error's line
        try:
            for key, value in SESSION_CONF.items():
                session.conf.set(key, value)
            tables = {str(r[1]).lower() for r in session.sql("SHOW TABLES").collect()}
        except BaseException:
            with suppress(Exception):  # with the short retries: nothing answers
                session.stop()
            raise
    retries, first, largest = LOST_SERVER_RETRIES
    client.set_retry_policies(
        [
            DefaultPolicy(
                max_retries=retries,
                initial_backoff=first,
                max_backoff=largest,
                backoff_multiplier=2.0,
            )
        ]
    )
    return tables


def quiet_spark_logs() -> None:
    """pyspark logs every failed query with its JVM stack on stderr; abeval says it
    in one line instead."""
    import logging
    import warnings

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).disabled = True
    # said in the error's one line
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")


def _is_spark_error(exc: BaseException) -> bool:
    try:
        from pyspark.errors import PySparkException
    except ImportError:
        return False
    return isinstance(exc, PySparkException) or type(exc).__module__.startswith("grpc")


def _server_lost(exc: BaseException) -> bool:
    text = str(exc)
    return "UNAVAILABLE" in text or "failed to connect" in text.lower()


def spark_message(shown: str, exc: BaseException) -> str:
    return f"the store {shown} failed: {spark_reason(exc)}"


def spark_reason(exc: BaseException) -> str:
    """Spark's first line, without the JVM stack and the SQLSTATE trailer."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if _server_lost(exc):
        return "no Spark Connect server answers there (is it started, and is the port right?)"
    return re.sub(r"\s*SQLSTATE: \w+\.?$", "", line).strip()
