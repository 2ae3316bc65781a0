-- abeval schema, step 10: integer keys given at ingest, so that the replay and the
-- health counts group and join on integers instead of text. request_no numbers the
-- (experiment, request_id) pairs of the store, item_no its item_id values: the same
-- number exactly when the same key, NULL exactly when the text is NULL. The
-- numbers are dense (1..n) and kept in the dictionaries request_keys and
-- item_keys; every ingest adds its new keys there and writes its rows with their
-- numbers (abeval/store/ingest/keys.py); the rows already stored are numbered the
-- same way after these statements, in the same transaction (abeval/store/migrate.py,
-- number_stored).
ALTER TABLE events ADD COLUMN request_no BIGINT;
ALTER TABLE events ADD COLUMN item_no BIGINT;
CREATE TABLE request_keys (
    experiment TEXT NOT NULL,
    request_id TEXT NOT NULL,
    request_no BIGINT NOT NULL,
    PRIMARY KEY (experiment, request_id)
);
CREATE TABLE item_keys (
    item_id TEXT NOT NULL,
    item_no BIGINT NOT NULL,
    PRIMARY KEY (item_id)
);
