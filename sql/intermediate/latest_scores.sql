-- latest_scores: one row per trial, its latest score (of the newest scorer_version written).
-- depends_on: all_scores

CREATE OR REPLACE VIEW latest_scores AS
SELECT * FROM all_scores
QUALIFY row_number() OVER (PARTITION BY trial_id ORDER BY created_at DESC) = 1;
