-- ledger: one row per request that has a response: the response that counts, the first ok one;
-- without one, the latest error.
-- depends_on: responses

CREATE OR REPLACE VIEW ledger AS
SELECT * FROM responses
QUALIFY response_precedence(request_id, status, created_at) = 1;
