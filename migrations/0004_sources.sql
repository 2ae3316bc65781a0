-- abeval schema, step 4: sources, tables read in place (`abeval source add`).
-- table_ref is the table as SQL names it (SCHEMA.TABLE), or on DuckDB the absolute
-- path or glob of Parquet/CSV files; mapping is JSON: {"columns": {field: column},
-- "event_types": {value: type}, "experiment": name or null, "attributes": {name:
-- column}}. The table's events are never copied into the store.
CREATE TABLE sources (
    name TEXT PRIMARY KEY,
    table_ref TEXT NOT NULL,
    mapping TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
