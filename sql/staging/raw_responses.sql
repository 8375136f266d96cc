-- raw_responses: one row per row of lake table responses as stored.
-- depends_on:

-- Response files written before finish_reason existed lack its column; the empty branch makes it
-- present (NULL there: unknown) whatever files the lake holds, so old lakes stay readable.
CREATE OR REPLACE VIEW raw_responses AS
SELECT * FROM lake_table('responses')
UNION ALL BY NAME
SELECT CAST(NULL AS VARCHAR) AS finish_reason WHERE false;
