-- Staging: the responses lake table (the ledger of every response ever received, errors included).
-- responses: one row per response.
-- cost_responses: one row per response, with a cost_usd column even over lakes written before
-- responses had one (tasks.models.cost prices every response when it is stored).

-- Response files written before finish_reason existed lack its column; the empty branch makes it
-- present (NULL there: unknown) whatever files the lake holds, so old lakes stay readable.
CREATE OR REPLACE VIEW raw_responses AS
SELECT * FROM lake_table('responses')
UNION ALL BY NAME
SELECT CAST(NULL AS VARCHAR) AS finish_reason WHERE false;

CREATE OR REPLACE VIEW responses AS
SELECT * EXCLUDE (day) FROM raw_responses;

-- Rows of older lakes read as NULL: unknown, never 0.
CREATE OR REPLACE VIEW cost_responses AS
SELECT * FROM responses
UNION ALL BY NAME
SELECT NULL::DOUBLE AS cost_usd WHERE false;
