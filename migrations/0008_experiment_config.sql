-- abeval schema, step 8: an experiment's saved configuration, recorded with
-- `abeval experiment set` (primary, secondary and guardrail metrics with their
-- margins, caps, CUPED days, target MDE, alpha, correction, planned horizon):
-- one JSON object of the recorded options, NULL when none is recorded.
ALTER TABLE experiments ADD COLUMN config TEXT;
