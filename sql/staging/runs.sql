-- runs: one row per run, its latest state.
-- depends_on: raw_runs

CREATE OR REPLACE VIEW runs AS
SELECT * FROM raw_runs
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY updated_at DESC) = 1;
