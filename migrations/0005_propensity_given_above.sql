-- abeval schema, step 5: the logging policy's step probability of an impression,
-- the probability of its item at its position given the items above it (a
-- Plackett-Luce step); enables the cascade and whole-list off-policy estimators.
ALTER TABLE events ADD COLUMN propensity_given_above DOUBLE PRECISION;
