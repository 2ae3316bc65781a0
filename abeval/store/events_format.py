"""The event format (docs/architecture.md#the-event-format) as data: column names, types and the
row checks that ingest applies, each with the reason a user sees.

Staging is three layers of one SELECT so that each conversion runs once per row:

1. :func:`text_layer`: every known column as trimmed text ``t_<col>`` (NULL when
   absent or empty), extra columns renamed ``abeval_x<i>`` (see :func:`extras`);
2. :func:`typed_layer`: the events table's types (``ts`` ... ``propensity``) and the
   numeric parse ``n_<col>`` of the numeric columns, from layer 1;
3. :func:`checks`: predicates over layers 1 and 2, each naming the column and
   giving the reason as a SQL expression (which may quote the bad value).
"""

from __future__ import annotations

from dataclasses import dataclass

from abeval.store.quoting import quote_ident

#: The largest position a row may have (the column is a 32-bit INTEGER).
MAX_POSITION = 2**31 - 1

REQUIRED = ("experiment", "arm", "user_id", "ts", "event_type")
OPTIONAL = (
    "request_id",
    "item_id",
    "position",
    "value",
    "event_id",
    "propensity",
    "propensity_given_above",
    "team",
)
KNOWN = REQUIRED + OPTIONAL
EVENT_TYPES = ("exposure", "impression", "click", "purchase", "rating")
#: Any other event type a team defines metrics over (docs/metrics.md#team-defined-metrics):
#: a lower-case identifier of at most 64 characters. ``event_type`` is lower-cased
#: before the check, so ``Add_To_Cart`` is stored as ``add_to_cart``.
CUSTOM_EVENT_TYPE = "^[a-z_][a-z0-9_]{0,63}$"
#: What a user reads about :data:`CUSTOM_EVENT_TYPE`.
CUSTOM_EVENT_TYPE_TEXT = "a lower-case identifier (letters, digits and _, at most 64 characters)"
NUMERIC = ("position", "value", "propensity", "propensity_given_above")
#: The columns that hold a logging probability in (0, 1].
PROBABILITIES = ("propensity", "propensity_given_above")
#: Names other logs give the event format's columns (lower case, without ``_``):
#: a file that has one of them is told which column it probably means.
COLUMN_ALIASES = {
    **dict.fromkeys(("timestamp", "time", "datetime", "eventtime", "date"), "ts"),
    **dict.fromkeys(("event", "type", "eventname", "action"), "event_type"),
    **dict.fromkeys(("variant", "group", "bucket", "treatment", "cohort"), "arm"),
    **dict.fromkeys(("user", "uid", "userid", "visitor", "visitorid", "customerid"), "user_id"),
    **dict.fromkeys(("exp", "experimentid", "test", "testid", "flag"), "experiment"),
    **dict.fromkeys(("item", "product", "productid", "itemid", "doc", "docid"), "item_id"),
    **dict.fromkeys(("rank", "pos", "slot"), "position"),
    **dict.fromkeys(("revenue", "amount", "price"), "value"),
    **dict.fromkeys(("request", "requestid", "impressionid", "query", "queryid"), "request_id"),
    **dict.fromkeys(("id", "eventid", "uuid"), "event_id"),
    **dict.fromkeys(("probability", "prob", "pscore"), "propensity"),
}
#: The largest ``|value|`` accepted. A double holds about 15 significant digits, so
#: larger amounts are not kept exactly; and with every value at most 1e15, per-user
#: and per-arm sums (up to 1e15 times the number of rows) and sums of squares and
#: products (1e30 times the rows squared) stay far below the largest double (1.8e308).
MAX_ABS_VALUE = 1e15
_MAX_TEXT = "1e15"


def extras(columns: list[str]) -> list[str]:
    """The columns kept as attributes, sorted by name (so that the attributes of
    the same row read from files with another column order are the same text)."""
    return sorted(c for c in columns if c not in KNOWN)


def extra_alias(i: int) -> str:
    """Layer 1 renames attribute columns so that no user column name (``bad``,
    ``attributes``, ``t_arm`` ...) can collide with the names abeval uses."""
    return f"abeval_x{i}"


#: The identifier columns whose trimming the ingest summary counts.
IDS = ("experiment", "arm", "user_id", "request_id", "item_id", "event_id")


def _text(c: str, first: bool) -> str:
    """Column ``c`` as text, trimmed of spaces; the first column of the file also
    loses a byte-order mark (U+FEFF) at its start: a file pasted after another
    keeps its mark at the start of a line, and an invisible character would make
    an experiment that prints like an existing one. (Only there: looking for it
    in every column would cost a tenth of the load's time.)"""
    raw = f"CAST({quote_ident(c)} AS VARCHAR)"
    if first:
        raw = f"CASE WHEN starts_with({raw}, chr(65279)) THEN substr({raw}, 2) ELSE {raw} END"
    return f"TRIM({raw})"


def text_layer(columns: list[str]) -> str:
    """Layer 1: ``t_<col>`` for every known column, then the extra columns as
    :func:`extra_alias` in the order of :func:`extras`, then ``abeval_trimmed``:
    whether trimming changed an identifier of the row."""
    present = set(columns)
    first = columns[0] if columns else None
    parts = [
        f"NULLIF({_text(c, c == first)}, '') AS t_{c}"
        if c in present
        else f"CAST(NULL AS VARCHAR) AS t_{c}"
        for c in KNOWN
    ]
    parts += [f"{quote_ident(c)} AS {extra_alias(i)}" for i, c in enumerate(extras(columns))]
    changed = [
        f"COALESCE(strlen(CAST({quote_ident(c)} AS VARCHAR)) <> strlen({_text(c, c == first)}), "
        "false)"
        for c in IDS
        if c in present
    ]
    parts.append(f"({' OR '.join(changed) or 'false'}) AS abeval_trimmed")
    return ", ".join(parts)


def normalised() -> str:
    """SQL over layers 1-2: what normalising changed in a row, as bits: 1 an
    identifier was trimmed, 2 ``event_type`` was lower-cased."""
    return (
        "(CASE WHEN abeval_trimmed THEN 1 ELSE 0 END + "
        "CASE WHEN t_event_type <> event_type THEN 2 ELSE 0 END)"
    )


#: Epoch timestamps by magnitude: (lowest, highest) of each unit and its
#: microseconds. Each unit covers 1973-03-03 to 5138-11-16 UTC, so a number is
#: one of them at most; 20240501 (a date without dashes) is none.
EPOCH_UNITS = (("seconds", 1e8, 1e11, 1e6), ("milliseconds", 1e11, 1e14, 1e3),
               ("microseconds", 1e14, 1e17, 1.0))  # fmt: skip


#: The epoch units ``--epoch`` declares, and their microseconds.
EPOCH_SCALES = {"s": 1e6, "ms": 1e3, "us": 1.0}


def instant_sql(text: str, epoch: str | None = None) -> str:
    """The ``TIMESTAMPTZ`` a timestamp field holds (NULL when it holds none): ISO
    8601 text (no zone: UTC), or a number of seconds, milliseconds or microseconds
    since 1970-01-01 UTC told apart by its magnitude (:data:`EPOCH_UNITS`; a
    fraction is kept to the microsecond), or, with ``epoch`` (``s``, ``ms``,
    ``us``), in that unit whatever its magnitude. Each value of a column is read
    on its own, so ISO and epoch values may be mixed. No time-zone lookup: the
    same instant whatever the session's zone."""
    number = f"TRY_CAST({text} AS DOUBLE)"
    micros = "to_timestamp(0) + to_microseconds(CAST(round({n} * {scale:g}) AS BIGINT))"
    if epoch is not None:
        # Within ±1e17 microseconds (about ±3,000 years) the BIGINT cannot overflow.
        scale = EPOCH_SCALES[epoch]
        whens = f"WHEN abs({number} * {scale:g}) < 1e17 THEN {micros.format(n=number, scale=scale)}"
    else:
        whens = " ".join(
            f"WHEN {number} >= {low:g} AND {number} < {high:g} "
            f"THEN {micros.format(n=number, scale=scale)}"
            for _, low, high, scale in EPOCH_UNITS
        )
    return f"(CASE WHEN {number} IS NULL THEN TRY_CAST({text} AS TIMESTAMPTZ) {whens} END)"


def typed_layer(epoch: str | None = None) -> str:
    """Layer 2 (over layer 1): typed event columns plus ``n_<col>`` numeric parses;
    ``epoch`` declares the unit of a numeric ``ts`` (:func:`instant_sql`)."""
    return ", ".join(
        [
            "*",
            *(f"TRY_CAST(t_{c} AS DOUBLE) AS n_{c}" for c in NUMERIC),
            "t_experiment AS experiment",
            "t_arm AS arm",
            "t_user_id AS user_id",
            # 'infinity' parses as a timestamp: keep only finite instants.
            f"CASE WHEN isfinite({instant_sql('t_ts', epoch)}) "
            f"THEN {instant_sql('t_ts', epoch)} AT TIME ZONE 'UTC' END AS ts",
            "LOWER(t_event_type) AS event_type",
            "t_request_id AS request_id",
            "t_item_id AS item_id",
            # TRY_CAST twice: 'inf', 'nan' or 3e9 must flag the row, not abort the load.
            "TRY_CAST(TRY_CAST(t_position AS DOUBLE) AS INTEGER) AS position",
            "TRY_CAST(t_value AS DOUBLE) AS value",
            "t_event_id AS event_id",
            "TRY_CAST(t_propensity AS DOUBLE) AS propensity",
            "TRY_CAST(t_propensity_given_above AS DOUBLE) AS propensity_given_above",
            "t_team AS team",
        ]
    )


@dataclass(frozen=True)
class Check:
    """One rule over layers 1-2: the row is bad when ``predicate`` is true."""

    column: str
    predicate: str
    reason: str  # a SQL expression giving the message


def _quoted(col: str) -> str:
    return f"'''' || COALESCE(t_{col}, '') || ''''"


def custom_type_bad() -> str:
    """SQL (DuckDB, where every file is checked) true when ``event_type`` is neither
    built in nor a team's identifier (:data:`CUSTOM_EVENT_TYPE`)."""
    types = ", ".join(f"'{e}'" for e in EVENT_TYPES)
    return (
        f"(event_type NOT IN ({types}) "
        f"AND NOT regexp_full_match(event_type, '{CUSTOM_EVENT_TYPE}'))"
    )


def checks() -> list[Check]:
    """The row checks, in the order a user would fix them."""
    out = [Check(c, f"t_{c} IS NULL", f"'{c} is empty; every event needs one'") for c in REQUIRED]
    out += [
        Check(
            "ts",
            "t_ts IS NOT NULL AND ts IS NULL",
            "CASE WHEN isfinite(TRY_CAST(t_ts AS DOUBLE)) "
            f"THEN 'cannot read ' || {_quoted('ts')} || ' as a timestamp: as a number it must "
            "be epoch seconds (1e8 to 1e11), milliseconds (1e11 to 1e14) or microseconds "
            "(1e14 to 1e17); else use ISO 8601 such as 2024-05-01T12:30:00Z' "
            f"ELSE 'cannot read ' || {_quoted('ts')} || ' as a timestamp; "
            "use ISO 8601 such as 2024-05-01T12:30:00Z' END",
        ),
        Check(
            "event_type",
            f"t_event_type IS NOT NULL AND {custom_type_bad()}",
            f"'unknown event_type ' || {_quoted('event_type')} || '; expected one of "
            + ", ".join(EVENT_TYPES)
            + f", or {CUSTOM_EVENT_TYPE_TEXT} for a team-defined metric'",
        ),
        Check(
            "position",
            "t_position IS NOT NULL AND (n_position IS NULL OR n_position < 1 "
            f"OR n_position <> FLOOR(n_position) OR n_position > {MAX_POSITION})",
            f"'position must be a whole number >= 1 (1 = top of the list), got ' "
            f"|| {_quoted('position')}",
        ),
        Check(
            "value",
            "t_value IS NOT NULL AND (n_value IS NULL OR NOT isfinite(n_value))",
            f"'value must be a number, got ' || {_quoted('value')}",
        ),
        Check(
            "value",
            f"t_value IS NOT NULL AND abs(n_value) > {_MAX_TEXT}",
            f"'value must be between -{_MAX_TEXT} and {_MAX_TEXT} "
            "(so that sums cannot overflow), got ' "
            f"|| {_quoted('value')}",
        ),
    ]
    out += [
        Check(
            c,
            f"t_{c} IS NOT NULL AND (n_{c} IS NULL OR NOT (n_{c} > 0 AND n_{c} <= 1))",
            f"'{c} must be a probability in (0, 1], got ' || {_quoted(c)}",
        )
        for c in PROBABILITIES
    ]
    out += [
        Check(
            col,
            f"event_type = 'impression' AND t_{col} IS NULL",
            f"'an impression needs {col}; add it or drop the row'",
        )
        for col in ("request_id", "item_id", "position")
    ]
    out += [
        Check(
            "item_id",
            "event_type = 'click' AND t_item_id IS NULL",
            "'a click needs the item_id it was on'",
        ),
        Check(
            "value",
            "event_type = 'purchase' AND t_value IS NULL",
            "'a purchase needs its revenue in value (0 if unknown)'",
        ),
        Check(
            "value",
            "event_type = 'purchase' AND n_value < 0",
            f"'purchase value must be >= 0, got ' || {_quoted('value')}",
        ),
        Check(
            "value",
            "event_type = 'rating' AND t_value IS NULL",
            "'a rating needs the rating in value'",
        ),
    ]
    return out


def failure_column() -> str:
    """SQL giving the column of the first failing check (NULL for a good row)."""
    return "CASE " + " ".join(f"WHEN {c.predicate} THEN '{c.column}'" for c in checks()) + " END"


def failure_reason() -> str:
    """SQL giving the reason of the first failing check (NULL for a good row)."""
    return "CASE " + " ".join(f"WHEN {c.predicate} THEN {c.reason}" for c in checks()) + " END"


def bad_expression() -> str:
    """True when any check fails."""
    return " OR ".join(f"COALESCE({c.predicate}, false)" for c in checks())


def layered(source: str, columns: list[str], epoch: str | None = None) -> str:
    """``SELECT`` of layers 1 and 2 over ``source`` (a table or table function)."""
    return f"SELECT {typed_layer(epoch)} FROM (SELECT {text_layer(columns)} FROM {source}) abeval_t"
