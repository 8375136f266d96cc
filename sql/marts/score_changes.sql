-- score_changes: one row per score row that differs from the trial's score row before it (an audit
-- of what re-scoring changed).
-- depends_on: score_history

-- What re-scoring changed: for each trial, every score row next to the one before it (ordered
-- by created_at) where the status or the predicted answer differs. flipped: correctness changed
-- (correct before and not now, or the reverse); is_latest: the row is the trial's current score.
-- Filter on previous_scorer_version / scorer_version to compare two versions.
CREATE OR REPLACE VIEW score_changes AS
SELECT
    trial_id, model, suite, task, variant, prompt_style, item_id, sample_idx, gold,
    previous_scorer_version, scorer_version, previous_status, status,
    previous_predicted, predicted,
    (previous_status = 'correct') <> (status = 'correct') AS flipped,
    previous_created_at, created_at AS changed_at, run_id, is_latest
FROM score_history
WHERE previous_status IS NOT NULL
  AND (previous_status IS DISTINCT FROM status OR previous_predicted IS DISTINCT FROM predicted)
ORDER BY created_at, trial_id;
