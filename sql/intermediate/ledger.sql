-- ledger: one row per request that has a response: the response that counts, the first ok one;
-- without one, the latest error.
-- depends_on: responses

CREATE OR REPLACE VIEW ledger AS
SELECT * FROM responses
QUALIFY row_number() OVER (
    PARTITION BY request_id
    ORDER BY (status = 'ok') DESC, CASE WHEN status = 'ok' THEN created_at END ASC, created_at DESC
) = 1;
