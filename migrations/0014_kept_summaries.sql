-- abeval schema, step 14: kept summaries (issue 32). What one experiment's
-- analysis reads of its events, computed once and kept: the per-arm sufficient
-- statistics of every metric (part "observed"), the replayed offline metrics
-- ("offline"), the off-policy estimates ("ope") and the online comparisons
-- ("compared"); experiment '' holds the agreement board's statistics ("board").
-- Each is a JSON text of the frozen results (floats read back exactly).
-- options_key: a digest of the run's options the part was computed under;
-- depends: a digest of what it was computed from (the experiment's ingests and
-- event counts, its settings and saved configuration, the metric definitions,
-- recorded target probabilities, abeval's summary version). A row whose depends
-- differs from the store's now is never read, and is replaced on the next write.
CREATE TABLE kept_summaries (
    experiment TEXT NOT NULL,
    part TEXT NOT NULL,
    options_key TEXT NOT NULL,
    depends TEXT NOT NULL,
    body TEXT NOT NULL,
    kept_at TIMESTAMP NOT NULL,
    PRIMARY KEY (experiment, part, options_key)
);
