-- abeval schema, step 7: an experiment's arms as a JSON array of names, so that
-- a name keeps its commas (it was a comma-separated list, which split `bert,v2`
-- into two arms). The arrays are rebuilt from the events, as every ingest does
-- (abeval/store/arm_lists.py builds the same text).
UPDATE experiments SET arms = COALESCE((
    SELECT '[' || STRING_AGG(DISTINCT '"' || REPLACE(REPLACE(arm, '\', '\\'), '"', '\"') || '"', ','
        ORDER BY '"' || REPLACE(REPLACE(arm, '\', '\\'), '"', '\"') || '"') || ']'
    FROM events WHERE events.experiment = experiments.experiment
), '[]');
