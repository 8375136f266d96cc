-- raw_runs: one row per row of lake table runs as stored.
-- One per state a run wrote (when it starts, heartbeats and ends).
-- depends_on:

CREATE OR REPLACE VIEW raw_runs AS
SELECT * FROM lake_table('runs');
