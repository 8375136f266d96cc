-- live_claims_of(...): one row per request of `for_ids` (NULL: every request) and claiming run whose claim still holds at `at_time`: not expired, not answered by the claiming run since it claimed, and the claiming run has not ended.
-- depends_on: raw_claims, responses, runs

-- The one definition of a live claim; the view live_claims is it at now() for every request.
-- Each chunk of a sweep reads it twice for its own requests (tasks/models/claims.py), so it is
-- written to cost as little as it can with the same rows. `at_time` is a value rather than now()
-- inside; the requests are picked as the claims are read; one scan of the claims groups each
-- request and run, and a pair is live when any of its rows expires after `at_time` (the view
-- claims' max(expires_at)), its claimed_at the minimum over all its rows (the tie-break's first
-- claim). An earlier form read the claims twice, once pruned by expiry to find the live pairs and
-- once in full for their claimed_at; on a sweep's lakes that cost more than the one scan it saved
-- (a chunk's reads are mostly planning and DuckLake's catalog reads, per table named: 46 -> 35 ms
-- of CPU for 1,000 fresh requests on a finished 200,000-item lake, 100 -> 73 ms for 1,000 just
-- claimed; bench/results.md, "share"). The responses anti-join then reads only the files whose
-- created_at reaches the live claims' claimed_at (DuckDB's join filter) and nothing when none is live.
CREATE OR REPLACE MACRO live_claims_of(for_ids, at_time) AS TABLE
WITH c AS (
    SELECT request_id, run_id, min(claimed_at) AS claimed_at, max(expires_at) AS expires_at
    FROM raw_claims
    WHERE for_ids IS NULL OR request_id IN (SELECT unnest(for_ids))
    GROUP BY request_id, run_id
    HAVING max(expires_at) > at_time
)
SELECT c.* FROM c
WHERE NOT EXISTS (SELECT 1 FROM responses r
                  WHERE r.request_id = c.request_id AND r.run_id = c.run_id AND r.created_at >= c.claimed_at)
  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.run_id = c.run_id AND u.status <> 'running');
