-- responses: one row per response.
-- depends_on: raw_responses

CREATE OR REPLACE VIEW responses AS
SELECT * FROM raw_responses;
