-- latest_requests: one row per trial and step, its latest request over every run, with the text
-- of the request's last message (content).
-- depends_on: run_requests

CREATE OR REPLACE VIEW latest_requests AS
SELECT trial_id, step, step_index, request_id, item_id, model, sample_idx, created_at,
       request_content(messages) AS content
FROM run_requests
QUALIFY request_recency(trial_id, step, created_at) = 1;
