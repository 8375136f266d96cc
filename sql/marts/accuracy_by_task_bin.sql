-- accuracy_by_task_bin: one row per model, suite, task and bin (variants and prompt styles together).
-- depends_on: trial_scores

-- The accuracy-against-key-entities figure of the report: all variants and prompt styles of a
-- task together.
CREATE OR REPLACE VIEW accuracy_by_task_bin AS
WITH counts AS (
    SELECT model, suite, task, bin, min(bin_lo) AS bin_lo, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, bin_lo;
