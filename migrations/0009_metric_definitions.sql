-- abeval schema, step 9: team-defined metrics, recorded with `abeval metrics add FILE`
-- (docs/metrics.md#team-defined-metrics). definition is JSON: {"kind": ...,
-- "numerator": {"event": ..., "value": bool}, "denominator": {...} or null,
-- "where": {attribute: text}, "lower_is_better": bool, "cap": quantile or null,
-- "description": text}; source is the file it was read from.
CREATE TABLE metric_definitions (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    source TEXT NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
