-- Staging: the requests lake table.
-- run_requests: one row per request and run that made it, including requests answered from the ledger.
-- requests: one row per request (content-addressed: request_id), the first time it was made.

CREATE OR REPLACE VIEW raw_requests AS
SELECT * FROM lake_table('requests');

CREATE OR REPLACE VIEW run_requests AS
SELECT * EXCLUDE (day) FROM raw_requests;

CREATE OR REPLACE VIEW requests AS
SELECT * EXCLUDE (run_id) FROM run_requests
QUALIFY row_number() OVER (PARTITION BY request_id ORDER BY created_at) = 1;
