-- claims: one row per request and claiming run: first claimed (for the tie-break), last renewed to.
-- depends_on: raw_claims

CREATE OR REPLACE VIEW claims AS
SELECT request_id, run_id, min(claimed_at) AS claimed_at, max(expires_at) AS expires_at
FROM raw_claims GROUP BY request_id, run_id;
