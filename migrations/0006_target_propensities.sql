-- abeval schema, step 6: the target policy's probabilities recorded with an
-- experiment (`abeval experiment set X --target-propensities FILE`), which the
-- report's off-policy estimates and `abeval agreement` read without a flag.
-- One row per (target arm, request, item, position): the target's marginal
-- probability of that item at that position on that request of the other arm,
-- and optionally its probability given the items above. Recording a file again
-- replaces the experiment's rows; target_files says which file they came from.
CREATE TABLE target_propensities (
    experiment TEXT NOT NULL,
    arm TEXT NOT NULL,
    request_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    probability DOUBLE PRECISION NOT NULL,
    probability_given_above DOUBLE PRECISION
);
CREATE TABLE target_files (
    experiment TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    checksum TEXT NOT NULL,
    rows_recorded BIGINT NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
