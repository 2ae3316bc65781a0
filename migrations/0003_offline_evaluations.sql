-- abeval schema, step 3: offline evaluations recorded against an experiment
-- (`abeval evaluate -r ARM=FILE ... --experiment X`), one row per (arm, metric).
-- A model's rows carry its value and, for every arm but the baseline (the
-- experiment's control), the paired difference against the baseline.
-- evaluation_id is a digest of the inputs' fingerprints and the conventions:
-- recording the same evaluation twice replaces it.
CREATE TABLE offline_evaluations (
    evaluation_id TEXT NOT NULL,
    experiment TEXT NOT NULL,
    arm TEXT NOT NULL,
    metric TEXT NOT NULL,
    value DOUBLE PRECISION,
    se DOUBLE PRECISION,
    users BIGINT NOT NULL,
    baseline_arm TEXT,
    difference DOUBLE PRECISION,
    difference_se DOUBLE PRECISION,
    difference_low DOUBLE PRECISION,
    difference_high DOUBLE PRECISION,
    paired_users BIGINT,
    conventions TEXT NOT NULL,
    fingerprints TEXT NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    PRIMARY KEY (evaluation_id, arm, metric)
);
