-- live_claims_of(...): one row per request of `for_ids` (NULL: every request) and claiming run whose claim still holds at `at_time`: not expired, not answered by the claiming run since it claimed, and the claiming run has not ended.
-- depends_on: raw_claims, responses, runs

-- The one definition of a live claim; the view live_claims is it at now() for every request.
-- Each chunk of a sweep reads it twice for its own requests (tasks/models/claims.py), so it is
-- written to read as little of a grown lake as it can with the same rows: `at_time` a value rather
-- than now() inside, and the expiry tested on the raw rows, lets DuckLake skip every claims file
-- whose expires_at all lie before `at_time` (a request and run is live when any of its rows expires
-- later, as the view claims' max(expires_at) does); the requests are picked before grouping; the
-- claimed_at of a live pair is still the minimum over all its rows, expired ones too (the
-- tie-break's first claim). The responses anti-join then reads only the files whose created_at
-- reaches the live claims' claimed_at (DuckDB's join filter) and nothing when none is live.
CREATE OR REPLACE MACRO live_claims_of(for_ids, at_time) AS TABLE
WITH live_keys AS (
    SELECT DISTINCT request_id, run_id FROM raw_claims
    WHERE expires_at > at_time AND (for_ids IS NULL OR request_id IN (SELECT unnest(for_ids)))
),
c AS (
    SELECT request_id, run_id, min(claimed_at) AS claimed_at, max(expires_at) AS expires_at
    FROM raw_claims SEMI JOIN live_keys USING (request_id, run_id) GROUP BY request_id, run_id
)
SELECT c.* FROM c
WHERE NOT EXISTS (SELECT 1 FROM responses r
                  WHERE r.request_id = c.request_id AND r.run_id = c.run_id AND r.created_at >= c.claimed_at)
  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.run_id = c.run_id AND u.status <> 'running');
