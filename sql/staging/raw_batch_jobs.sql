-- raw_batch_jobs: one row per row of lake table batch_jobs as stored.
-- depends_on:

CREATE OR REPLACE VIEW raw_batch_jobs AS
SELECT * FROM lake_table('batch_jobs');
