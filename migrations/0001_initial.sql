-- abeval schema, step 1: events, ingests, experiments, rejected rows.
-- Portable SQL: runs unchanged on DuckDB and PostgreSQL.
-- events.row_key: digest of the whole row when event_id is empty; a row is
-- identified by COALESCE(event_id, row_key) within its experiment.

CREATE SEQUENCE ingest_id_seq START 1;

CREATE TABLE ingests (
    ingest_id BIGINT PRIMARY KEY,
    source TEXT NOT NULL,
    format TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    checksum TEXT NOT NULL,
    rows_read BIGINT NOT NULL,
    rows_inserted BIGINT NOT NULL,
    rows_duplicate BIGINT NOT NULL,
    rows_rejected BIGINT NOT NULL,
    status TEXT NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP NOT NULL
);

CREATE TABLE events (
    experiment TEXT NOT NULL,
    arm TEXT NOT NULL,
    user_id TEXT NOT NULL,
    ts TIMESTAMP NOT NULL,
    event_type TEXT NOT NULL,
    request_id TEXT,
    item_id TEXT,
    position INTEGER,
    value DOUBLE PRECISION,
    event_id TEXT,
    propensity DOUBLE PRECISION,
    attributes TEXT,
    row_key TEXT,
    ingest_id BIGINT NOT NULL
);

CREATE TABLE rejected_rows (
    ingest_id BIGINT NOT NULL,
    file TEXT NOT NULL,
    line BIGINT NOT NULL,
    column_name TEXT,
    reason TEXT NOT NULL,
    raw TEXT
);

CREATE TABLE experiments (
    experiment TEXT PRIMARY KEY,
    arms TEXT NOT NULL,
    first_ts TIMESTAMP,
    last_ts TIMESTAMP,
    control_arm TEXT,
    split TEXT,
    updated_at TIMESTAMP NOT NULL
);
