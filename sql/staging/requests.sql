-- requests: one row per request (content-addressed: request_id), the first time it was made.
-- depends_on: run_requests

CREATE OR REPLACE VIEW requests AS
SELECT * EXCLUDE (run_id) FROM run_requests
QUALIFY row_number() OVER (PARTITION BY request_id ORDER BY created_at) = 1;
