-- run_bin_counts: one row per run, model, suite, task and bin with the outcome counts of the run's trials, stored.
-- depends_on: run_trials, trial_scores
-- materialised: run_id

-- A run's own trials (those answered from the ledger included), all variants and prompt styles
-- together: what run_accuracy_by_bin reports. Stored so that it reads a row per run and bin
-- instead of joining every scored trial with the runs of every request (the join and the
-- DISTINCT took 1 s of CPU at 1,000,000 responses). A run's rows change when a request of the
-- run is stored or when the latest score or the item of one of its trials does
-- (tasks/lake/refresh.py: CHANGED_KEYS).
CREATE OR REPLACE VIEW run_bin_counts AS
SELECT r.run_id, ts.model, ts.suite, ts.task, ts.bin, min(ts.bin_lo) AS bin_lo, unnest(status_counts(ts.status))
FROM trial_scores ts
JOIN (SELECT DISTINCT run_id, trial_id FROM run_trials) r USING (trial_id)
GROUP BY r.run_id, ts.model, ts.suite, ts.task, ts.bin;
