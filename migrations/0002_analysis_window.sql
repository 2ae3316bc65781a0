-- abeval schema, step 2: an experiment's analysis window, recorded with
-- `abeval experiment set --from --to` (naive UTC timestamps; the end is excluded).
ALTER TABLE experiments ADD COLUMN window_from TIMESTAMP;
ALTER TABLE experiments ADD COLUMN window_to TIMESTAMP;
