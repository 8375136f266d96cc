-- Staging: the runs lake table.
-- raw_runs: one row per state a run wrote (when it starts, heartbeats and ends).
-- runs: one row per run, its latest state.

CREATE OR REPLACE VIEW raw_runs AS
SELECT * FROM lake_table('runs');

CREATE OR REPLACE VIEW runs AS
SELECT * EXCLUDE (day) FROM raw_runs
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY updated_at DESC) = 1;
