-- run_accuracy_by_bin: one row per run, model, suite, task and bin, over the run's trials only.
-- depends_on: run_bin_counts

-- The sweep's headline: a run's own trials (those answered from the ledger included), all
-- variants and prompt styles together; the counts are stored (intermediate/run_bin_counts.sql).
CREATE OR REPLACE VIEW run_accuracy_by_bin AS
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM run_bin_counts
ORDER BY run_id, model, suite, task, bin_lo;
