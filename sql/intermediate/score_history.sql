-- score_history: one row per score row (every scorer version) with the trial's score row before it
-- (ordered by created_at; previous_* NULL for the first) and its item's suite, task, variant,
-- prompt style and gold; is_latest: the row is the trial's current score.
-- depends_on: all_scores, items
-- materialised: trial_id

-- Stored: score_changes reads its rows; derived, its windows ran over every score version of the
-- lake (1.8 s of CPU at 1,000,000 responses).
CREATE OR REPLACE VIEW score_history AS
WITH history AS (
    SELECT
        trial_id, item_id, model, sample_idx, run_id, scorer_version, status, predicted, created_at,
        lag(scorer_version) OVER w AS previous_scorer_version,
        lag(status) OVER w AS previous_status,
        lag(predicted) OVER w AS previous_predicted,
        lag(created_at) OVER w AS previous_created_at,
        row_number() OVER (PARTITION BY trial_id ORDER BY created_at DESC) = 1 AS is_latest
    FROM all_scores
    WINDOW w AS (PARTITION BY trial_id ORDER BY created_at)
)
SELECT h.*, i.suite, i.task, i.variant, i.prompt_style, i.gold
FROM history h
JOIN items i USING (item_id);
