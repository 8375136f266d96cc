-- Overlapping sweeps and batch jobs: claims on requests being sent, provider batch jobs.

CREATE OR REPLACE VIEW raw_claims AS
SELECT * FROM read_parquet('{{lake}}/claims/**/*.parquet', hive_partitioning = true, union_by_name = true);

CREATE OR REPLACE VIEW raw_batch_jobs AS
SELECT * FROM read_parquet('{{lake}}/batch_jobs/**/*.parquet', hive_partitioning = true, union_by_name = true);

-- One claim per request and run: first claimed (for the tie-break), last renewed to.
CREATE OR REPLACE VIEW claims AS
SELECT request_id, run_id, min(claimed_at) AS claimed_at, max(expires_at) AS expires_at
FROM raw_claims GROUP BY request_id, run_id;

-- Claims still holding: not expired, not answered by the claiming run since it claimed, and the
-- claiming run has not ended (a run that ended, however, no longer sends anything).
CREATE OR REPLACE VIEW live_claims AS
SELECT c.* FROM claims c
WHERE c.expires_at > now()
  AND NOT EXISTS (SELECT 1 FROM responses r
                  WHERE r.request_id = c.request_id AND r.run_id = c.run_id AND r.created_at >= c.claimed_at)
  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.run_id = c.run_id AND u.status <> 'running');

-- The latest state of each batch job; `stored` means its lines are in the ledger.
CREATE OR REPLACE VIEW batch_jobs AS
SELECT * EXCLUDE (day) FROM raw_batch_jobs
QUALIFY row_number() OVER (PARTITION BY batch_id ORDER BY updated_at DESC) = 1;
