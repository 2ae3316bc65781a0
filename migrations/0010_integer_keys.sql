-- abeval schema, step 10: integer keys given at ingest, so that the replay and the
-- health counts group and join on integers instead of text. request_no numbers the
-- (experiment, request_id) pairs of the store, item_no its item_id values: the same
-- number exactly when the same key, NULL exactly when the text is NULL. Every
-- ingest numbers its new rows the same way (abeval/store/ingest/keys.py); here the
-- rows already stored are numbered.
ALTER TABLE events ADD COLUMN request_no BIGINT;
ALTER TABLE events ADD COLUMN item_no BIGINT;
UPDATE events SET request_no = k.request_no FROM (
    SELECT experiment, request_id, ROW_NUMBER() OVER (ORDER BY experiment, request_id) AS request_no
    FROM (SELECT DISTINCT experiment, request_id FROM events WHERE request_id IS NOT NULL) d
) k WHERE events.experiment = k.experiment AND events.request_id = k.request_id;
UPDATE events SET item_no = k.item_no FROM (
    SELECT item_id, ROW_NUMBER() OVER (ORDER BY item_id) AS item_no
    FROM (SELECT DISTINCT item_id FROM events WHERE item_id IS NOT NULL) d
) k WHERE events.item_id = k.item_id;
