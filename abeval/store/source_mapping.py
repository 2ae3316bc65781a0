"""A source's mapping (docs/usage.md#tables-read-in-place): which of a table's columns is
which field of the event format, which of its values is which event type, and
what the columns must hold.

The mapping is data: parsed from the options of ``abeval source add``, checked
against the columns the engine describes (:func:`resolve`), kept as JSON in the
``sources`` table. Nothing here runs SQL.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from abeval.errors import InputError, OptionError, did_you_mean
from abeval.files import split_name
from abeval.store.events_format import EVENT_TYPES, KNOWN, REQUIRED

#: What a field's column must hold, as families of column types.
TEXT_LIKE = frozenset({"text", "integer"})
ALLOWED: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "experiment",
            "arm",
            "user_id",
            "event_type",
            "request_id",
            "item_id",
            "event_id",
            "team",
        ),
        TEXT_LIKE,
    ),
    "ts": frozenset({"timestamp", "timestamptz", "date"}),
    "position": frozenset({"integer"}),
    "value": frozenset({"integer", "number"}),
    "propensity": frozenset({"integer", "number"}),
    "propensity_given_above": frozenset({"integer", "number"}),
}
ATTRIBUTE_TYPES = frozenset(
    {"text", "integer", "number", "boolean", "date", "timestamp", "timestamptz"}
)
_NEEDS = {
    "text": "text or whole numbers",
    "ts": "a timestamp or a date",
    "position": "whole numbers",
    "value": "numbers",
    "propensity": "numbers",
    "propensity_given_above": "numbers",
}

#: abeval's own tables: a source cannot be one of them (its view would read itself).
OWN_TABLES = frozenset(
    {
        "events",
        "experiments",
        "ingests",
        "kept_summaries",
        "metric_definitions",
        "rejected_rows",
        "offline_evaluations",
        "schema_migrations",
        "sources",
        "store_keys",
    }
)
_PART = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'
_TABLE = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Mapping:
    """What the user said: field -> column, value -> event type, the one experiment
    of a table without an experiment column, attribute name -> column."""

    columns: dict[str, str] = field(default_factory=dict)
    event_types: dict[str, str] = field(default_factory=dict)
    experiment: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "columns": self.columns,
                "event_types": self.event_types,
                "experiment": self.experiment,
                "attributes": self.attributes,
            },
            sort_keys=True,
        )

    def describe(self) -> str:
        """The mapping in the words of the options that made it (:func:`describe_mapping`)."""
        return describe_mapping(self)

    @classmethod
    def from_json(cls, text: str) -> Mapping:
        data = json.loads(text)
        return cls(
            columns=dict(data.get("columns") or {}),
            event_types=dict(data.get("event_types") or {}),
            experiment=data.get("experiment"),
            attributes=dict(data.get("attributes") or {}),
        )


@dataclass(frozen=True)
class Resolved:
    """A mapping checked against the table's columns: for every field of the event
    format the column that holds it (None: absent, NULL) and its type family; the
    event type of every value (the values not named keep their own name); the
    attributes with their columns."""

    columns: dict[str, str | None]
    families: dict[str, str]
    values: dict[str, str]
    experiment: str | None
    attributes: dict[str, str]


def _pairs(
    text: str | None, parameter: str, form: str, example: str, known: tuple[str, ...], what: str
) -> list[tuple[str, str]]:
    """``A=B,C=D`` as pairs, stripped, each ``A`` one of ``known`` (``what`` names
    them: ``a field of the event format``); an OptionError for ``parameter`` otherwise."""
    out: list[tuple[str, str]] = []
    for part in text.split(",") if text else []:
        left, sep, right = (s.strip() for s in part.partition("="))
        if not sep or not left or not right:
            raise OptionError(parameter, text, f"write it as {form}, such as {example}")
        if left not in known:
            raise OptionError(
                parameter,
                f"{left}={right}",
                f"{left!r} is not {what}; {did_you_mean(left, known)}the "
                f"{form.split('=')[0].lower()}s are {', '.join(known)}",
                allowed=known,
            )
        out.append((left, right))
    return out


def parse_columns(text: str | None) -> dict[str, str]:
    """``--map user_id=uid,ts=event_time`` → {field: column}."""
    out: dict[str, str] = {}
    example = "user_id=uid,ts=event_time"
    what = "a field of the event format"
    for name, column in _pairs(text, "columns", "FIELD=COLUMN,...", example, KNOWN, what):
        if name in out:
            raise OptionError("columns", text, f"names the field {name} twice; keep one")
        out[name] = column
    return out


def parse_event_types(text: str | None) -> dict[str, str]:
    """``--event-type impression=view,click=clk,click=tap`` → {value: event type}."""
    out: dict[str, str] = {}
    example = "impression=view,click=clk"
    types = EVENT_TYPES
    for kind, value in _pairs(
        text, "event_types", "TYPE=VALUE,...", example, types, "an event type"
    ):
        if out.get(value, kind) != kind:
            raise OptionError(
                "event_types", text, f"maps {value!r} to both {out[value]} and {kind}; keep one"
            )
        out[value] = kind
    return out


def parse_attributes(text: str | None) -> dict[str, str]:
    """``--attributes country,device=dev_type`` → {attribute name: column}."""
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, column = (s.strip() for s in part.partition("="))
        column = column if sep else name
        if not name or not column:
            raise OptionError(
                "attributes",
                text,
                "write it as COLUMN or NAME=COLUMN, separated by commas, such as "
                "country,device=device_type",
            )
        if name in out:
            raise OptionError("attributes", text, f"names the attribute {name} twice; keep one")
        out[name] = column
    return out


def is_file_reference(table: str) -> bool:
    """Whether ``--table`` names files (a path or glob of Parquet or CSV files)
    rather than a table of the database."""
    return "/" in table or "*" in table or split_name(table)[1] in ("parquet", "csv")


def check_table_name(table: str) -> None:
    """A table of the store's database: ``TABLE``, ``SCHEMA.TABLE`` or
    ``CATALOG.SCHEMA.TABLE``, each part a plain name or in double quotes, and not
    one of abeval's own tables."""
    if not _TABLE.fullmatch(table):
        raise InputError(
            f"{{table}} {table!r} is neither a table name nor Parquet/CSV files; write "
            'SCHEMA.TABLE (double-quote a part with other characters: lake."my events") or a '
            "path such as data/*.parquet",
            parameters=("table",),
        )
    parts = [p.strip('"').lower() for p in table.split(".")]
    if parts[-1] in OWN_TABLES and (len(parts) == 1 or parts[-2] in ("main", "public")):
        raise InputError(
            f"{{table}} {table} is abeval's own table; name the table that holds your events",
            parameters=("table",),
        )


def file_reader(table: str) -> tuple[str, str]:
    """``(absolute path or glob, format)`` of a ``--table`` that names files."""
    fmt = split_name(table)[1]
    if fmt not in ("parquet", "csv"):
        raise InputError(
            f"{{table}} {table}: abeval reads Parquet (.parquet) or CSV (.csv, .csv.gz) files "
            "in place; name them by such a suffix (a glob works: data/*.parquet)",
            parameters=("table",),
        )
    return str(Path(table).expanduser().absolute()), fmt


def family(sql_type: str) -> str:
    """The family of a column type as DuckDB, PostgreSQL or Spark name it: text,
    integer, number, timestamp, timestamptz, date, boolean, or other."""
    t = sql_type.strip().lower()
    if "[]" in t or t.startswith(("struct", "map", "array", "list", "union", "json")):
        return "other"
    if "with time zone" in t or t in ("timestamptz", "timestamp_ltz"):
        return "timestamptz"
    if t.startswith("timestamp") or t == "datetime":
        return "timestamp"
    if t == "date":
        return "date"
    if re.fullmatch(r"u?(tiny|small|big|huge)?int(eger|\d)?|u?integer|long|short|byte", t):
        return "integer"
    if t.startswith(("double", "float", "real", "decimal", "numeric")):
        return "number"
    if t.startswith(("varchar", "text", "char", "string", "uuid", "enum", "bpchar", "name")):
        return "text"
    if t in ("boolean", "bool"):
        return "boolean"
    return "other"


def _column(columns: dict[str, str], wanted: str) -> str | None:
    """The table's column named ``wanted``: the exact name, else the one name that
    differs only in case."""
    if wanted in columns:
        return wanted
    same = [c for c in columns if c.lower() == wanted.lower()]
    return same[0] if len(same) == 1 else None


def _missing(
    where: str, column: str, how: str, parameter: str, columns: dict[str, str]
) -> InputError:
    """``how`` names ``parameter`` as ``{parameter}``."""
    return InputError(
        f"{where} has no column {column!r} ({how}); "
        f"{did_you_mean(column, columns)}its columns are {', '.join(columns)}",
        parameters=(parameter,),
    )


def _typed(where: str, fld: str, column: str, sql_type: str, allowed: frozenset[str]) -> str:
    """The type family of ``column``, checked against what ``fld`` needs."""
    fam = family(sql_type)
    if fam in allowed:
        return fam
    needs = _NEEDS.get(fld, _NEEDS["text"]) if fld != "attribute" else "a plain value"
    fix = (
        f"cast it in a view (CREATE VIEW ... AS SELECT CAST({column} AS TIMESTAMP) ...)"
        if fld == "ts"
        else "map another column, or cast it in a view"
    )
    return _raise(f"{where}: column {column!r} is {sql_type}, and {fld} needs {needs}; {fix}")


def _raise(message: str) -> str:
    raise InputError(message)


def resolve(where: str, mapping: Mapping, columns: dict[str, str]) -> Resolved:
    """Check ``mapping`` against the table's ``columns`` ({name: SQL type}):
    every mapped column exists with a usable type, every required field has a
    column. ``where`` names the source and table in the one-line error."""
    chosen: dict[str, str | None] = {}
    families: dict[str, str] = {}
    # The columns the user named first: their mistakes are the likelier ones.
    for fld in sorted(KNOWN, key=lambda f: f not in mapping.columns):
        if fld == "experiment" and mapping.experiment is not None:
            chosen[fld] = None
            continue
        wanted = mapping.columns.get(fld)
        column = _column(columns, wanted or fld)
        if column is None and wanted is not None:
            raise _missing(where, wanted, f"{{columns}} {fld}={wanted}", "columns", columns)
        if column is None and fld in REQUIRED:
            how = (
                "{experiment_column} COLUMN, or {experiment} NAME for a table of one experiment"
                if fld == "experiment"
                else f"{{columns}} {fld}=COLUMN"
            )
            raise InputError(
                f"{where} has no column for {fld}; name it with {how} "
                f"(its columns are {', '.join(columns)})",
                parameters=("columns", "experiment_column", "experiment"),
            )
        chosen[fld] = column
        if column is not None:
            families[fld] = _typed(where, fld, column, columns[column], ALLOWED[fld])
    attributes = {}
    for name, wanted in sorted(mapping.attributes.items()):
        column = _column(columns, wanted)
        if column is None:
            raise _missing(where, wanted, f"{{attributes}} {name}={wanted}", "attributes", columns)
        _typed(where, "attribute", column, columns[column], ATTRIBUTE_TYPES)
        attributes[name] = column
    values = {kind: kind for kind in EVENT_TYPES if kind not in mapping.event_types.values()}
    values.update(mapping.event_types)
    ordered = {f: chosen[f] for f in KNOWN}
    return Resolved(ordered, families, values, mapping.experiment, attributes)


def describe_mapping(mapping: Mapping) -> str:
    """The mapping in the words of the options that made it."""
    parts = [f"{k}={v}" for k, v in mapping.columns.items()]
    text = ", ".join(parts) if parts else "columns by their own names"
    if mapping.experiment is not None:
        text += f"; experiment {mapping.experiment}"
    if mapping.event_types:
        types = ", ".join(f"{t}={v}" for v, t in mapping.event_types.items())
        text += f"; event types {types}"
    if mapping.attributes:
        text += "; attributes " + ", ".join(
            n if n == c else f"{n}={c}" for n, c in mapping.attributes.items()
        )
    return text


def check_name(name: str) -> None:
    """A source's name: a letter or digit, then letters, digits, ``_ . -``."""
    if not NAME.fullmatch(name):
        raise InputError(
            f"cannot use {name!r} as a source name; use letters, digits, _ . - "
            "(at most 64, starting with a letter or digit), such as lake-events"
        )
