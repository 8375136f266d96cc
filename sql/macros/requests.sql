-- Macros: which request of a trial's step counts.

-- The recency rank of a request among the requests of the same trial and step: 1 is the latest
-- (a chain re-run may rebuild its later steps, so only the latest request of a step counts).
-- Used as `QUALIFY request_recency(trial_id, step, created_at) = 1` by the view latest_requests
-- and by tasks/scoring/score.py, which ranks only the requests its selection names (a run, a day).
CREATE OR REPLACE MACRO request_recency(trial_id, step, created_at) AS
    row_number() OVER (PARTITION BY trial_id, step ORDER BY created_at DESC);
