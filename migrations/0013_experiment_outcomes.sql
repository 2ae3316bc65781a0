-- abeval schema, step 13: what was decided about an experiment, recorded with
-- `abeval experiment set --owner --hypothesis --tag --status --decided-on`
-- (issue 32): one row per experiment that has any of them. tags is a JSON list
-- of the experiment's tags in the order added; status is running, shipped,
-- rolled_back or abandoned (NULL: none recorded); decided_on is the date of
-- the decision as YYYY-MM-DD, only with a status other than running.
CREATE TABLE experiment_outcomes (
    experiment TEXT PRIMARY KEY,
    owner TEXT,
    hypothesis TEXT,
    tags TEXT,
    status TEXT,
    decided_on TEXT,
    updated_at TIMESTAMP NOT NULL
);
