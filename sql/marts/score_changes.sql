-- Marts (audit): what re-scoring changed.
-- score_changes: one row per score row that differs from the trial's score row before it.

-- What re-scoring changed: for each trial, every score row next to the one before it (ordered
-- by created_at) where the status or the predicted answer differs. flipped: correctness changed
-- (correct before and not now, or the reverse); is_latest: the row is the trial's current score.
-- Filter on previous_scorer_version / scorer_version to compare two versions.
CREATE OR REPLACE VIEW score_changes AS
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
SELECT
    h.trial_id, h.model, i.suite, i.task, i.variant, i.prompt_style, h.item_id, h.sample_idx, i.gold,
    h.previous_scorer_version, h.scorer_version, h.previous_status, h.status,
    h.previous_predicted, h.predicted,
    (h.previous_status = 'correct') <> (h.status = 'correct') AS flipped,
    h.previous_created_at, h.created_at AS changed_at, h.run_id, h.is_latest
FROM history h
JOIN items i USING (item_id)
WHERE h.previous_status IS NOT NULL
  AND (h.previous_status IS DISTINCT FROM h.status OR h.previous_predicted IS DISTINCT FROM h.predicted)
ORDER BY h.created_at, h.trial_id;
