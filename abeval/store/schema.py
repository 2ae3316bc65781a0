"""abeval's tables, described once: each table's columns in order, their kinds,
which may be NULL and which make the key.

The migrations (``migrations/*.sql``, ordered steps that are never rewritten)
make these tables on DuckDB and PostgreSQL, and a test checks that a migrated
store has exactly them (tests/store/test_schema.py). What other code needs of the schema
follows from here: the Spark tables' DDL (:mod:`abeval.store.backends.spark.schema`,
:mod:`abeval.store.backends.spark.own_tables`), the column lists of the modules that write
abeval's own tables, and each engine's type names
(:attr:`abeval.store.backends.Backend.type_names`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The kinds of column abeval uses, with their portable SQL names (the
#: migrations' spelling, which DuckDB and PostgreSQL both take).
PORTABLE_TYPES = {
    "text": "TEXT",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "double": "DOUBLE PRECISION",
    "timestamp": "TIMESTAMP",  # zone-less, UTC
}


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # a key of PORTABLE_TYPES
    nullable: bool = True
    key: bool = False  # part of the table's primary key


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def _table(name: str, spec: str) -> Table:
    """A table from one line per column: ``name kind``, then ``not null`` or
    ``key`` (a key column is not null)."""
    columns = []
    for line in spec.strip().splitlines():
        words = line.split()
        flags = " ".join(words[2:])
        if words[1] not in PORTABLE_TYPES or flags not in ("", "not null", "key"):
            raise ValueError(f"table {name}: cannot read column {line.strip()!r}")
        key = flags == "key"
        columns.append(Column(words[0], words[1], nullable=not flags, key=key))
    return Table(name, tuple(columns))


#: Every table of a migrated store, in the order of its columns there (a column
#: added by a later migration comes last, as ``ALTER TABLE ... ADD COLUMN`` puts it).
TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        _table(
            "schema_migrations",  # abeval.store.migrate's bookkeeping
            """
            version integer key
            name text not null
            applied_at timestamp not null
            """,
        ),
        _table(  # 0001
            "ingests",
            """
            ingest_id bigint key
            source text not null
            format text not null
            size_bytes bigint not null
            checksum text not null
            rows_read bigint not null
            rows_inserted bigint not null
            rows_duplicate bigint not null
            rows_rejected bigint not null
            status text not null
            started_at timestamp not null
            finished_at timestamp not null
            """,
        ),
        _table(  # 0001, 0005, 0010, 0012
            "events",
            """
            experiment text not null
            arm text not null
            user_id text not null
            ts timestamp not null
            event_type text not null
            request_id text
            item_id text
            position integer
            value double
            event_id text
            propensity double
            attributes text
            row_key text
            ingest_id bigint not null
            propensity_given_above double
            request_no bigint
            item_no bigint
            team text
            """,
        ),
        _table(  # 0010: the dictionaries of the integer keys (abeval.store.ingest.keys)
            "request_keys",
            """
            experiment text key
            request_id text key
            request_no bigint not null
            """,
        ),
        _table(  # 0010
            "item_keys",
            """
            item_id text key
            item_no bigint not null
            """,
        ),
        _table(  # 0001
            "rejected_rows",
            """
            ingest_id bigint not null
            file text not null
            line bigint not null
            column_name text
            reason text not null
            raw text
            """,
        ),
        _table(  # 0001, 0002, 0008
            "experiments",
            """
            experiment text key
            arms text not null
            first_ts timestamp
            last_ts timestamp
            control_arm text
            split text
            updated_at timestamp not null
            window_from timestamp
            window_to timestamp
            config text
            """,
        ),
        _table(  # 0003
            "offline_evaluations",
            """
            evaluation_id text key
            experiment text not null
            arm text key
            metric text key
            value double
            se double
            users bigint not null
            baseline_arm text
            difference double
            difference_se double
            difference_low double
            difference_high double
            paired_users bigint
            conventions text not null
            fingerprints text not null
            recorded_at timestamp not null
            """,
        ),
        _table(  # 0004
            "sources",
            """
            name text key
            table_ref text not null
            mapping text not null
            created_at timestamp not null
            updated_at timestamp not null
            """,
        ),
        _table(  # 0006
            "target_propensities",
            """
            experiment text not null
            arm text not null
            request_id text not null
            item_id text not null
            position integer not null
            probability double not null
            probability_given_above double
            """,
        ),
        _table(  # 0006
            "target_files",
            """
            experiment text key
            file text not null
            checksum text not null
            rows_recorded bigint not null
            recorded_at timestamp not null
            """,
        ),
        _table(  # 0009
            "metric_definitions",
            """
            name text key
            definition text not null
            source text not null
            recorded_at timestamp not null
            """,
        ),
        _table(  # 0011
            "store_keys",
            """
            name text key
            secret text not null
            created_at timestamp not null
            """,
        ),
        _table(  # 0013
            "experiment_outcomes",
            """
            experiment text key
            owner text
            hypothesis text
            tags text
            status text
            decided_on text
            updated_at timestamp not null
            """,
        ),
        _table(  # 0014
            "kept_summaries",
            """
            experiment text key
            part text key
            options_key text key
            depends text not null
            body text not null
            kept_at timestamp not null
            """,
        ),
    )
}

#: abeval's own small tables: written by abeval's commands, not by an ingest
#: (on Spark, made by the first write that needs one).
OWN_TABLES = (
    "sources",
    "metric_definitions",
    "offline_evaluations",
    "target_propensities",
    "target_files",
    "store_keys",
    "experiment_outcomes",
)
