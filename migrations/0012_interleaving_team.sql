-- abeval schema, step 12: the ranker that contributed an impression to an
-- interleaved list (team draft), one of the two rankers an interleaved
-- experiment compares; NULL outside interleaved experiments (issue 33).
ALTER TABLE events ADD COLUMN team TEXT;
