-- run_requests: one row per request and run that made it, including requests answered from the ledger.
-- depends_on: raw_requests

CREATE OR REPLACE VIEW run_requests AS
SELECT * FROM raw_requests;
