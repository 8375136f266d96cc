-- live_claims: one row per request and claiming run whose claim still holds: not expired, not
-- answered by the claiming run since it claimed, and the claiming run has not ended (a run that
-- ended, however, no longer sends anything).
-- depends_on: claims, responses, runs

CREATE OR REPLACE VIEW live_claims AS
SELECT c.* FROM claims c
WHERE c.expires_at > now()
  AND NOT EXISTS (SELECT 1 FROM responses r
                  WHERE r.request_id = c.request_id AND r.run_id = c.run_id AND r.created_at >= c.claimed_at)
  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.run_id = c.run_id AND u.status <> 'running');
