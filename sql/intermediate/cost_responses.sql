-- cost_responses: one row per response, with a cost_usd column even over lakes written before
-- responses had one (tasks.models.cost prices every response when it is stored).
-- depends_on: responses

-- Rows of older lakes read as NULL: unknown, never 0.
CREATE OR REPLACE VIEW cost_responses AS
SELECT * FROM responses
UNION ALL BY NAME
SELECT NULL::DOUBLE AS cost_usd WHERE false;
