"""The direct load's SQL: the staging SQL of :mod:`~abeval.store.ingest.staging`
in a cheaper form that gives the same rows wherever it accepts a file.

The staging SQL (:func:`~abeval.store.ingest.staging.stage_select`) is the
definition: it trims every field, converts the types and evaluates every check of
:func:`~abeval.store.events_format.checks` with the reason it reports. The
direct load needs less: the typed row, whether it is good, and what normalising
changed. Three things make it cheaper (a third of the staging SQL's cost over
the reader's), and none changes a stored value:

- **Trimming only where it can change something.** ``TRIM`` removes the
  characters of Unicode's space-separator category from both ends, and copies
  every string it is given. Of the ASCII characters only the space is such a
  separator, so an identifier of ASCII text that neither starts nor ends with a
  space is its own trim; only the others (a space at an end, any byte outside
  ASCII, which includes a byte-order mark) go through the staging expression.
  The typed fields (``ts``, ``event_type``, the numbers) are not trimmed at all:
  DuckDB's casts skip ASCII white space at either end and fail on any other
  character, and no event type holds a space, so a field that trimming would
  change either reads as the same value or fails the good-row test.
- **Timestamps without a time-zone lookup**, and without a number parse where
  the text holds a colon (no number does). A ``TIMESTAMPTZ`` counts
  microseconds from the epoch in UTC, so the UTC wall time the staging SQL
  gets with ``AT TIME ZONE 'UTC'`` is ``make_timestamp`` of those microseconds.
- **One good-row test** in place of a failure reason per check: the conjunction
  of what a good row satisfies, each clause the negation of one or more checks.
  Any NULL in it counts as bad, so where it and the checks could disagree the row
  is called bad and the file goes to the staged load, which applies the checks
  themselves (``tests/store/test_ingest_direct_sql.py`` compares the two on rows made
  to sit on every edge of every check).
"""

from __future__ import annotations

from abeval.store.events_format import (
    EVENT_TYPES,
    IDS,
    KNOWN,
    MAX_ABS_VALUE,
    custom_type_bad,
    extra_alias,
    extras,
    instant_sql,
    normalised,
)
from abeval.store.events_format import MAX_POSITION as _MAX_POSITION
from abeval.store.events_format import _text as staged_text
from abeval.store.ingest.source import Source
from abeval.store.ingest.staging import attributes_sql, row_key_sql
from abeval.store.quoting import quote_ident


def _read_layer(columns: list[str]) -> str:
    """``r_<col>``: each known column of the file as read; ``m_<col>``: whether
    trimming may change an identifier (see the module's docstring; the empty
    string is below ``'!'``, so it is caught too); the extra columns under their
    aliases."""
    parts = []
    for c in KNOWN:
        if c in columns:
            raw = f"CAST({quote_ident(c)} AS VARCHAR)"
            parts.append(f"{raw} AS r_{c}")
            if c in IDS:
                parts.append(f"({_may_trim(raw)}) AS m_{c}")
    parts += [f"{quote_ident(c)} AS {extra_alias(i)}" for i, c in enumerate(extras(columns))]
    return ", ".join(parts)


def _may_trim(raw: str) -> str:
    """SQL: whether trimming may change the identifier ``raw`` (see the module's
    docstring; the empty string is below ``'!'``, so it is caught too)."""
    # ``x < '!'``: the first byte is a space (or below); ``LIKE '% '``: the last is.
    return f"strlen({raw}) <> length({raw}) OR {raw} < '!' OR {raw} LIKE '% '"


def _key_text(c: str, first: bool) -> str:
    """SQL over ``r_<c>``, the identifier ``c`` as read: the value the direct load
    stores (``t_<c>`` of :func:`_text_layer`), a function of the text read alone."""
    return (
        f"CASE WHEN {_may_trim(f'r_{c}')} THEN NULLIF({staged_text(f'r_{c}', first)}, '') "
        f"ELSE r_{c} END"
    )


def key_values(src: Source) -> str:
    """``SELECT`` of ``experiment, request_id, item_id`` rows whose distinct
    (experiment, request_id) pairs and item_id values are those of the rows of
    :func:`direct_select` (good or bad), for the dictionaries of the integer
    keys (:func:`~abeval.store.ingest.keys.add_keys`).

    The stored identifier is a function of the text read, so the distinct pairs
    and items are taken from the text as read, one pass over the file's three
    columns, and only those (a tenth of the rows, or fewer) are trimmed: trimming
    every row, as the insert does, cost a third of this pass at 2M rows."""
    columns = src.read_columns
    first = columns[0] if columns else None
    keys = ("experiment", "request_id", "item_id")
    read = ", ".join(
        f"CAST({quote_ident(c)} AS VARCHAR) AS r_{c}"
        if c in columns
        else f"CAST(NULL AS VARCHAR) AS r_{c}"
        for c in keys
    )
    texts = ", ".join(f"{_key_text(c, c == first)} AS {c}" for c in keys)
    return (
        f"SELECT {texts} FROM (SELECT r_experiment, r_request_id, r_item_id "
        f"FROM (SELECT {read} FROM {src.reader()}) abeval_r "
        "GROUP BY GROUPING SETS ((r_experiment, r_request_id), (r_item_id))) abeval_k"
    )


def _text_layer(columns: list[str]) -> str:
    """``t_<col>``: each known column as the staging SQL's text layer has it
    (trimmed, NULL when empty or absent), except that only identifiers are
    trimmed (see the module's docstring), with ``TRIM`` run only where ``m_<col>``
    says it may change them; ``abeval_trimmed``: whether it did (as
    :func:`~abeval.store.events_format.text_layer` says)."""
    first = columns[0] if columns else None

    def trim(c: str) -> str:
        return staged_text(f"r_{c}", c == first)

    parts = []
    for c in KNOWN:
        if c not in columns:
            parts.append(f"CAST(NULL AS VARCHAR) AS t_{c}")
        elif c in IDS:
            parts.append(f"CASE WHEN m_{c} THEN NULLIF({trim(c)}, '') ELSE r_{c} END AS t_{c}")
        else:
            parts.append(f"NULLIF(r_{c}, '') AS t_{c}")
    ids = [c for c in IDS if c in columns]
    changed = " OR ".join(f"COALESCE(strlen(r_{c}) <> strlen({trim(c)}), false)" for c in ids)
    any_may = " OR ".join(f"m_{c}" for c in ids)
    parts.append(
        f"CASE WHEN {any_may} THEN {changed} ELSE false END AS abeval_trimmed"
        if ids
        else "false AS abeval_trimmed"
    )
    return ", ".join(parts)


def _typed_layer() -> str:
    """The events table's columns, typed as the staging SQL types them, over the
    text layer and the numeric parses."""
    return ", ".join(
        [
            "*",
            "t_experiment AS experiment",
            "t_arm AS arm",
            "t_user_id AS user_id",
            "CASE WHEN isfinite(abeval_tz) THEN make_timestamp(epoch_us(abeval_tz)) END AS ts",
            "LOWER(t_event_type) AS event_type",
            "t_request_id AS request_id",
            "t_item_id AS item_id",
            "TRY_CAST(n_position AS INTEGER) AS position",
            "n_value AS value",
            "t_event_id AS event_id",
            "n_propensity AS propensity",
            "n_propensity_given_above AS propensity_given_above",
            "t_team AS team",
        ]
    )


# What a row of each event type needs beyond the required columns.
_NEEDS = {
    "impression": "t_request_id IS NOT NULL AND t_item_id IS NOT NULL AND t_position IS NOT NULL",
    "click": "t_item_id IS NOT NULL",
    "purchase": "t_value IS NOT NULL AND n_value >= 0",
    "rating": "t_value IS NOT NULL",
}


def _event_type_needs() -> str:
    """One CASE: the event type is built in and the row has what that type needs,
    or it is a team's event type (any row of one is good)."""
    whens = " ".join(f"WHEN '{e}' THEN {_NEEDS.get(e, 'true')}" for e in EVENT_TYPES)
    return f"CASE event_type {whens} ELSE NOT {custom_type_bad()} END"


def good_row() -> str:
    """SQL over the typed row: true when every check of
    :func:`~abeval.store.events_format.checks` passes; false or NULL otherwise."""
    return (
        "t_experiment IS NOT NULL AND t_arm IS NOT NULL AND t_user_id IS NOT NULL "
        "AND ts IS NOT NULL "
        "AND (t_position IS NULL OR (n_position >= 1 AND n_position = floor(n_position) "
        f"AND n_position <= {_MAX_POSITION})) "
        f"AND (t_value IS NULL OR (isfinite(n_value) AND abs(n_value) <= {MAX_ABS_VALUE:g})) "
        "AND (t_propensity IS NULL OR (n_propensity > 0 AND n_propensity <= 1)) "
        "AND (t_propensity_given_above IS NULL OR (n_propensity_given_above > 0 "
        "AND n_propensity_given_above <= 1)) "
        f"AND {_event_type_needs()}"
    )


def _instant(text: str, epoch: str | None) -> str:
    """:func:`~abeval.store.events_format.instant_sql` without its number parse
    for text holding a colon, which no number does: ISO 8601 times with hours
    and minutes, the common case, go straight to the timestamp cast (the failed
    number parse of every such field cost a sixth of the conversions)."""
    number_or_iso = instant_sql(text, epoch)
    return (
        f"CASE WHEN contains({text}, ':') THEN TRY_CAST({text} AS TIMESTAMPTZ) "
        f"ELSE {number_or_iso} END"
    )


def direct_select(src: Source) -> str:
    """``SELECT`` of the rows of ``src`` as the events table's columns, with
    ``good`` (:func:`good_row`, NULL counting as false) and ``norm`` (what
    normalising changed, as :func:`~abeval.store.events_format.normalised` says)."""
    columns = src.read_columns
    parsed = (
        f"SELECT *, {_instant('t_ts', src.epoch)} AS abeval_tz, "
        "TRY_CAST(t_position AS DOUBLE) AS n_position, TRY_CAST(t_value AS DOUBLE) AS n_value, "
        "TRY_CAST(t_propensity AS DOUBLE) AS n_propensity, "
        "TRY_CAST(t_propensity_given_above AS DOUBLE) AS n_propensity_given_above "
        f"FROM (SELECT *, {_text_layer(columns)} FROM "
        f"(SELECT {_read_layer(columns)} FROM {src.reader()}) abeval_r) abeval_t"
    )
    checked = (
        f"SELECT *, {attributes_sql(columns)} AS attributes, "
        f"COALESCE({good_row()}, false) AS good "
        f"FROM (SELECT {_typed_layer()} FROM ({parsed}) abeval_n) abeval_c"
    )
    return (
        f"SELECT {', '.join(KNOWN)}, attributes, good, {normalised()} AS norm, "
        f"{row_key_sql()} AS row_key FROM ({checked}) abeval_s"
    )
