-- batch_jobs: one row per batch job, its latest state; `stored` means its lines are in the ledger.
-- depends_on: raw_batch_jobs

CREATE OR REPLACE VIEW batch_jobs AS
SELECT * FROM raw_batch_jobs
QUALIFY row_number() OVER (PARTITION BY batch_id ORDER BY updated_at DESC) = 1;
