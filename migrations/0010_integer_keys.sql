-- abeval schema, step 10: integer keys given at ingest, so that the replay and the
-- health counts group and join on integers instead of text. request_no numbers the
-- (experiment, request_id) pairs of the store, item_no its item_id values: the same
-- number exactly when the same key, NULL exactly when the text is NULL. Every
-- ingest numbers its new rows (abeval/store/ingest/keys.py); the rows already
-- stored are numbered the same way after these statements, in the same
-- transaction (abeval/store/migrate.py, number_stored: a hash needs the engine).
ALTER TABLE events ADD COLUMN request_no BIGINT;
ALTER TABLE events ADD COLUMN item_no BIGINT;
