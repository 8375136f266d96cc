-- run_accuracy_by_bin: one row per run, model, suite, task and bin, over the run's trials only.
-- depends_on: run_trials, trial_scores

-- The sweep's headline: a run's own trials (those answered from the ledger included), all
-- variants and prompt styles together.
CREATE OR REPLACE VIEW run_accuracy_by_bin AS
WITH counts AS (
    SELECT r.run_id, ts.model, ts.suite, ts.task, ts.bin, min(ts.bin_lo) AS bin_lo, unnest(status_counts(ts.status))
    FROM trial_scores ts
    JOIN (SELECT DISTINCT run_id, trial_id FROM run_trials) r USING (trial_id)
    GROUP BY r.run_id, ts.model, ts.suite, ts.task, ts.bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY run_id, model, suite, task, bin_lo;
