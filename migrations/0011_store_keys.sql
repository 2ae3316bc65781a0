-- abeval schema, step 11: the store's own secret keys, one row per use. The key
-- "kept_evaluations" signs the file abeval evaluate --experiment keeps when the
-- store refuses its record (HMAC-SHA256, abeval/store/store_keys.py): only a
-- reader of this table can make a file that abeval experiment record accepts.
-- The key itself is random and made on its first use, not here.
CREATE TABLE store_keys (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
