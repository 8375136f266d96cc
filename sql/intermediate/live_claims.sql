-- live_claims: one row per request and claiming run whose claim still holds: not expired, not
-- answered by the claiming run since it claimed, and the claiming run has not ended (a run that
-- ended, however, no longer sends anything).
-- depends_on: live_claims_of

CREATE OR REPLACE VIEW live_claims AS
SELECT * FROM live_claims_of(NULL, now());
