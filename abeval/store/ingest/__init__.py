"""``abeval ingest``: load event files into the store, fast, validated and all or nothing.

How a file is loaded into a DuckDB store:

1. **Direct load.** One ``INSERT INTO events ... SELECT`` reads the file with
   DuckDB's own reader (``read_csv`` with every column as text, ``read_parquet``,
   ``read_json`` with every key as text), converts the types and checks every
   row in the same pass (the staging SQL in a cheaper form that stores the same
   values, :mod:`~abeval.store.backends.duckdb.direct_sql`). A bad row stops the
   statement (DuckDB's ``error()``); so does a malformed CSV line (the reader's
   reject table is checked after). Rows already in the store and rows repeated
   in the file (same ``event_id``, or the same full row when there is no
   ``event_id``) are then deleted from what was just inserted, the rows left
   get their integer keys (:mod:`~abeval.store.ingest.keys`), and
   ``experiments`` and ``ingests`` are updated, all in one transaction. A clean
   file, the common case, is read and written once. An ``event_id`` used with
   different content (a conflict, in the file or against the store) also sends
   the file to the staged load, where its rows are bad rows.
2. **Staged load**, when the direct load stopped (and on other engines): the
   transaction is rolled back, and the file is read into a temporary staging
   table with a bad-row flag and the column and reason of the first failed
   check. The file's lines are indexed (one more read, on this path only) to give
   every bad row its physical line number and raw text. With
   ``on_error="abort"`` the first bad rows are reported as
   ``FILE:LINE:COLUMN: reason`` and nothing is written; with ``on_error="skip"``
   the good rows are inserted and their repeats deleted as in the direct load,
   and the bad rows go to ``rejected_rows``.

Either way a failed or killed ingest leaves the store as it was.

For another engine (PostgreSQL) only the staged load is used: it runs in an
in-memory DuckDB and the good rows reach the store through the engine's bulk
path (``COPY``).

Line numbers are the physical lines of the file, as an editor shows them: the
CSV header is line 1, blank lines count, and a quoted field that spans several
lines is reported at the line where its row starts. Parquet rows are numbered
from 1 (``FILE:row N``). In JSON Lines files, the keys found in the first
20,480 non-blank lines (plus every column of the event format) are read; an
attribute key that first appears later is not kept.

The package, one responsibility a module:

- :mod:`~abeval.store.ingest.run`: :func:`ingest_file`, choosing the load;
- :mod:`~abeval.store.ingest.source`: the file's format and columns, and its readers;
- :mod:`~abeval.store.ingest.staging`: the SQL that types, checks and keys the rows;
- :mod:`~abeval.store.backends.duckdb.direct` and :mod:`~abeval.store.ingest.staged`: the two loads;
- :mod:`~abeval.store.backends.duckdb.direct_sql`: the staging SQL in the cheaper form the
  direct load runs, equal wherever it calls a row good;
- :mod:`~abeval.store.ingest.locate`: the line of each bad row (``FILE:LINE:COLUMN``);
- :mod:`~abeval.store.ingest.repeats`: rows loaded once, conflicting event ids;
- :mod:`~abeval.store.ingest.lines`: byte-order marks, the header line and the
  lines of a file that is not all UTF-8, read by Python;
- :mod:`~abeval.store.ingest.notes`: what normalising changed, far timestamps,
  look-alike names;
- :mod:`~abeval.store.backends.postgresql.copy`: the ``COPY`` path to PostgreSQL;
- :mod:`~abeval.store.ingest.record`: the checksum and the ``ingests`` row;
- :mod:`~abeval.store.ingest.summary`: :class:`IngestSummary`, what the caller gets.
"""

from abeval.choices import FileFormat as Format
from abeval.choices import OnError
from abeval.store.ingest.run import ingest_file
from abeval.store.ingest.source import detect_format
from abeval.store.ingest.summary import IngestSummary

__all__ = ["Format", "IngestSummary", "OnError", "detect_format", "ingest_file"]
